import { describe, expect, it } from 'vitest';
import { underflowProblem } from '../../src/lib/json-check.ts';
import { parseLine } from '../../src/modules/import/import.records.ts';

describe('numbers that read as 0 though they are not', () => {
  it('are found with their path, in any spelling; zeros in any spelling are not', () => {
    expect(underflowProblem('{"a":{"b":[1,2,1e-400]}}')?.path).toBe('/a/b/2');
    expect(underflowProblem('{"x~y":-0.1e-999999}')?.path).toBe('/x~0y');
    expect(underflowProblem(`[0.${'0'.repeat(330)}5]`)?.path).toBe('/0');
    expect(underflowProblem('{"a":"1e-400 in a string","b":0e-999,"c":-0.000e-5000,"d":1e-300}')).toBeUndefined();
    expect(underflowProblem('{"a":0.000001}')).toBeUndefined();
  });

  it('refuse an import line, which names the field', () => {
    const line = parseLine(
      '{"type":"contact","id":"01900000-0000-7000-8000-000000000001","custom_fields":{"n":2e-500}}',
    );
    expect(line).toEqual({ error: expect.stringMatching(/^\/custom_fields\/n is a number out of range/) });
  });
});
