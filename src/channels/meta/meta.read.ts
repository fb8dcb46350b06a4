// Small readers for untrusted JSON: each returns the value when it has the expected type, else null.

/** A JSON object. */
export type Json = Record<string, unknown>;

/** The value as an object, or null. */
export function object(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}

/** The objects of an array (other items dropped); [] when not an array. */
export function array(value: unknown): Json[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item: unknown): Json[] => {
    const json = object(item);
    return json ? [json] : [];
  });
}

/** A non-empty string, or null. */
export function str(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/**
 * The longest identifier read from a notification. Meta's are short (a wamid is some 60
 * characters, a wa_id 15 digits); the bound keeps a malformed one within what an index can hold,
 * so such an item is skipped rather than failing its whole notification on every redelivery.
 */
export const MAX_IDENTIFIER_LENGTH = 256;

/** An identifier (a wamid, a wa_id): a non-empty string of at most MAX_IDENTIFIER_LENGTH, or null. */
export function identifier(value: unknown): string | null {
  const text = str(value);
  return text !== null && text.length <= MAX_IDENTIFIER_LENGTH ? text : null;
}

/** A finite number (Meta sends some as strings), or null. */
export function num(value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  return Number.isFinite(n) ? n : null;
}

/** Meta's Unix-seconds timestamp ("1700000000") as ISO 8601 with microseconds, or null. */
export function isoFromUnixSeconds(value: unknown): string | null {
  const seconds = num(value);
  if (seconds === null || seconds < 0 || seconds > 253402300799) return null;
  return new Date(Math.trunc(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, '.000000Z');
}
