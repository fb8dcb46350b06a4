import { describe, expect, it } from 'vitest';
import { mergeJson, withoutNulls } from '../../src/lib/json-merge.ts';

describe('withoutNulls', () => {
  it('drops null members at every depth, and objects left empty by that, but keeps arrays and objects sent empty', () => {
    expect(
      withoutNulls({ a: null, b: { c: null, d: 1 }, e: { f: null }, g: {}, h: [null, { i: null }], j: 0, k: '' }),
    ).toEqual({
      b: { d: 1 },
      g: {},
      h: [null, { i: null }],
      j: 0,
      k: '',
    });
    expect(withoutNulls({ a: { b: { c: null } } })).toEqual({});
    expect(withoutNulls('x')).toBe('x');
  });

  it('keeps keys that name Object.prototype members as plain data', () => {
    const value = JSON.parse(
      '{"constructor":"c","toString":"t","__proto__":{"polluted":true},"valueOf":{"x":null,"y":1}}',
    );
    const cleaned = withoutNulls(value);
    expect(Object.keys(cleaned)).toEqual(['constructor', 'toString', '__proto__', 'valueOf']);
    expect(Object.getPrototypeOf(cleaned)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(cleaned.valueOf).toEqual({ y: 1 });
  });
});

describe('mergeJson', () => {
  it('merges objects at every depth; arrays and plain values replace', () => {
    expect(mergeJson({ a: 1, b: { c: 1, d: [1, 2] }, e: 'x' }, { b: { d: [3], f: 2 }, e: { g: 1 }, h: true })).toEqual({
      a: 1,
      b: { c: 1, d: [3], f: 2 },
      e: { g: 1 },
      h: true,
    });
  });

  it('merges keys named like Object.prototype members, new or stored', () => {
    expect(mergeJson({ meta: { constructor: 'Acme', toString: 'x' } }, { other: 1, meta: { valueOf: 2 } })).toEqual({
      meta: { constructor: 'Acme', toString: 'x', valueOf: 2 },
      other: 1,
    });
    expect(mergeJson({}, { constructor: { enabled: true } })).toEqual({ constructor: { enabled: true } });
  });

  it('leaves its inputs unchanged', () => {
    const current = { a: { b: 1 } };
    const patch = { a: { c: 2 } };
    mergeJson(current, patch);
    expect(current).toEqual({ a: { b: 1 } });
    expect(patch).toEqual({ a: { c: 2 } });
  });
});
