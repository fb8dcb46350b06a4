import { visit } from 'jsonc-parser';

/**
 * How deep a JSON value may nest. JSON.stringify recurses, and a few thousand levels (a 10 KB line)
 * overflow its stack; nothing the service stores comes near this.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The magnitudes a JSON number may have besides 0. A number is read as JavaScript reads it (a
 * double); from 2^53 on, not every integer is one, so 123456789012345678 would be kept as
 * 123456789012345680: the largest magnitude is Number.MAX_SAFE_INTEGER, 9007199254740991. At the
 * other end, PostgreSQL writes a jsonb number out in full, so 5e-324 (6 characters in the body)
 * reads back as 326: below 1e-20 is refused too.
 */
export const JSON_NUMBER_RANGE = { min: 1e-20, max: Number.MAX_SAFE_INTEGER } as const;

/** Where a JSON value holds what the database cannot store, and what it is. */
export interface JsonProblem {
  path: string;
  message: string;
}

/**
 * The first part of a parsed JSON value that PostgreSQL would refuse, as a JSON pointer: a string
 * (value or key) with a NUL character or a lone surrogate (text and jsonb hold neither), a number
 * outside JSON_NUMBER_RANGE, or nesting deeper than MAX_JSON_DEPTH. Undefined when there is none.
 */
export function jsonProblem(value: unknown, path = '', depth = 0): JsonProblem | undefined {
  if (typeof value === 'string') return textProblem(value, path);
  if (typeof value === 'number') return numberProblem(value, path);
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= MAX_JSON_DEPTH) return { path: path || '/', message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  for (const [key, item] of Object.entries(value)) {
    const at = `${path}/${key}`;
    const problem = textProblem(key, at) ?? jsonProblem(item, at, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

function numberProblem(value: number, path: string): JsonProblem | undefined {
  const magnitude = Math.abs(value);
  if (magnitude === 0 || (magnitude >= JSON_NUMBER_RANGE.min && magnitude <= JSON_NUMBER_RANGE.max)) return undefined;
  return {
    path: path || '/',
    message: `is a number out of range: 0, or from ${JSON_NUMBER_RANGE.min} to ${JSON_NUMBER_RANGE.max} in magnitude (send it as a string)`,
  };
}

function textProblem(text: string, path: string): JsonProblem | undefined {
  if (text.includes('\0')) return { path: path || '/', message: 'contains the NUL character (\\u0000)' };
  if (!text.isWellFormed()) return { path: path || '/', message: 'is not well-formed Unicode (a lone surrogate)' };
  return undefined;
}

/** A string PostgreSQL can store: without NUL characters, lone surrogates replaced (U+FFFD). */
export function storableText(text: string): string {
  return text.replaceAll('\0', '').toWellFormed();
}

/**
 * Where a JSON text holds a number that JavaScript reads as 0 though its digits are not all zero
 * (1e-400): parsing has lost it, so jsonProblem cannot see it. jsonc-parser walks the text with the
 * paths and the literal's own characters; only texts with such a long negative exponent or fraction
 * are walked.
 */
export function underflowProblem(text: string): JsonProblem | undefined {
  if (!MAY_UNDERFLOW.test(text)) return undefined;
  let problem: JsonProblem | undefined;
  visit(text, {
    onLiteralValue(value, offset, length, _line, _column, pathSupplier) {
      if (problem || value !== 0) return;
      const mantissa = text.slice(offset, offset + length).split(/[eE]/)[0];
      if (!/[1-9]/.test(mantissa)) return;
      const path = pathSupplier()
        .map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`)
        .join('');
      problem = {
        path: path || '/',
        message: `is a number out of range: 0, or from ${JSON_NUMBER_RANGE.min} to ${JSON_NUMBER_RANGE.max} in magnitude (send it as a string)`,
      };
    },
  });
  return problem;
}

/** A negative exponent of three digits or more, or a fraction of 300 zeros: what can read as 0. */
const MAY_UNDERFLOW = /[eE]-0*[1-9]\d{2}|\.0{300}/;
