import { Format } from 'typebox/format';
import { UUID_PATTERN } from './ids.ts';

/** The instants PostgreSQL stores and writes back in ISO form: years 1 (it has no year 0) to 9999. */
export const EARLIEST_MS = Date.parse('0001-01-01T00:00:00Z');
export const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Whether a date-time's instant, in UTC, is one PostgreSQL stores and writes back in ISO form:
 * from year 1 (it has no year 0) to year 9999 (it writes later years in a form no client reads).
 * `wellFormed` checks the text itself (the ajv-formats or TypeBox date-time format).
 */
export function storableDateTime(value: string, wellFormed: (value: string) => boolean): boolean {
  if (value.startsWith('0000') || !wellFormed(value)) return false;
  // PostgreSQL reads a leap second (…:60) as the first second of the next minute.
  const leap = /[Tt ]\d{2}:\d{2}:60/.test(value);
  const ms = leap ? Date.parse(value.replace(/([Tt ]\d{2}:\d{2}):60/, '$1:59')) + 1000 : Date.parse(value);
  if (Number.isNaN(ms) || ms < EARLIEST_MS || ms > LATEST_MS) return false;
  // In the last millisecond of 9999, a seventh fraction digit may round the instant into 10000.
  return ms < LATEST_MS || !/\.\d{7}/.test(value);
}

/**
 * The same narrowed formats for TypeBox's own checks (the import's records), which do not go
 * through the HTTP validator (src/http/validation.ts): a UUID in its plain form, a storable
 * date-time. Called once at start.
 */
export function registerStorableFormats(): void {
  Format.Set('uuid', (value) => UUID_PATTERN.test(value));
  Format.Set('date-time', (value) => storableDateTime(value, Format.IsDateTime));
}
