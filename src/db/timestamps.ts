/**
 * PostgreSQL keeps microseconds; a JS Date keeps milliseconds. Both drivers are told to hand
 * timestamptz values over as text (the session runs in UTC), and this turns that text into ISO 8601
 * with all six fraction digits, so export cursors and imported timestamps survive unchanged.
 */
export function pgTimestampToIso(value: string): string {
  // "2026-11-21 19:54:13.152+00" -> "2026-11-21T19:54:13.152000Z"
  const match = /^(\d{4,}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00(?::00)?$/.exec(value);
  if (!match) return value; // infinity and other special values pass through
  return `${match[1]}T${match[2]}.${(match[3] ?? '').padEnd(6, '0')}Z`;
}

/**
 * The SQL that writes a timestamptz expression as pgTimestampToIso does ("2026-11-21T19:54:13.152000Z"),
 * for statements whose answer PostgreSQL formats itself (JSON built in the database).
 */
export function isoTimestampSql(expression: string): string {
  return `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

export const TIMESTAMPTZ_OID = 1184;
export const INT8_OID = 20;

/** Counts and sums come back as int8; every one of ours fits a JS number. */
export function parseInt8(value: string): number {
  return Number(value);
}
