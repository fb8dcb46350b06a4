import { invalid } from '../../lib/domain-errors.ts';
import { EARLIEST_MS, LATEST_MS } from '../../lib/formats.ts';

const DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const MAX_WINDOW_MICROS = 31n * 24n * 3600n * 1_000_000n;
const LATEST_MICROS = BigInt(LATEST_MS) * 1000n + 999n;

/** A parsed timestamp: exact epoch microseconds and its canonical ISO text (UTC, six fraction digits). */
export interface Instant {
  micros: bigint;
  iso: string;
}

/**
 * Parses an ISO 8601 query timestamp keeping microseconds (a JS Date keeps milliseconds only). A date
 * alone means midnight UTC; a time without an offset is read as UTC.
 */
export function parseInstant(raw: string, field: string): Instant {
  const m = DATE_TIME.exec(raw.trim());
  const bad = () => invalid(`${field} must be an ISO 8601 date-time`, [{ location: 'querystring', path: `/${field}` }]);
  if (!m) throw bad();
  const [, date, hm = '00:00', sec = '00', fraction = '', zone = 'Z'] = m;
  // Date.parse would roll an impossible day over (February 30 into March 2).
  if (!isCalendarDate(date)) throw bad();
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  const ms = Date.parse(`${date}T${hm}:${sec}${offset}`);
  if (Number.isNaN(ms) || ms < EARLIEST_MS) throw bad();
  const micros = BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
  if (micros > LATEST_MICROS) throw bad();
  return { micros, iso: isoFromMicros(micros) };
}

/** Whether YYYY-MM-DD names a day of the calendar. */
function isCalendarDate(date: string): boolean {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return days !== undefined && day >= 1 && day <= days;
}

export function isoFromMicros(micros: bigint): string {
  // Floored, so an instant before 1970 keeps a positive sub-millisecond part (BigInt division truncates).
  const ms = micros >= 0n ? micros / 1000n : (micros - 999n) / 1000n;
  const rest = (micros - ms * 1000n).toString().padStart(3, '0');
  return new Date(Number(ms)).toISOString().replace('Z', `${rest}Z`);
}

export function nowInstant(): Instant {
  const micros = BigInt(Date.now()) * 1000n;
  return { micros, iso: isoFromMicros(micros) };
}

/** The contract's window: `until` after `since`, at most 31 days apart. */
export function checkWindow(since: Instant, until: Instant): void {
  if (until.micros <= since.micros)
    throw invalid('until must be after since', [{ location: 'querystring', path: '/until' }]);
  if (until.micros - since.micros > MAX_WINDOW_MICROS) {
    throw invalid('since and until must be at most 31 days apart; request longer periods in pieces', [
      { location: 'querystring', path: '/until' },
    ]);
  }
}

/** Splits a comma list and checks every value against the allowed ones (400 naming the unknown). */
export function parseList<T extends string>(
  raw: string | undefined,
  allowed: readonly T[],
  field: string,
): T[] | undefined {
  if (raw === undefined) return undefined;
  const values = [
    ...new Set(
      raw
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== ''),
    ),
  ];
  if (values.length === 0)
    throw invalid(`${field} must name at least one value`, [{ location: 'querystring', path: `/${field}` }]);
  const unknown = values.filter((v) => !(allowed as readonly string[]).includes(v));
  if (unknown.length > 0) {
    throw invalid(`unknown ${field}: ${unknown.join(', ')}`, [
      { location: 'querystring', path: `/${field}`, message: `allowed: ${allowed.join(', ')}` },
    ]);
  }
  return values as T[];
}
