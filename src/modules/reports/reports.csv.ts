import type { ReportTable } from './reports.schemas.ts';

/**
 * A field as RFC 4180 writes it: quoted when it holds a quote, a comma or a line break, its quotes
 * doubled; null is empty. Written here because it is these few lines, and no CSV package is in use.
 */
function field(value: string | number | null | undefined): string {
  if (value == null) return '';
  // Text a spreadsheet would run as a formula (a user's name, a handoff reason: free text) starts
  // with a quote, as OWASP advises against CSV injection; numbers are written as they are.
  const text = typeof value === 'string' && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One table as CSV: a header row of its column keys, then its rows, lines ended by CRLF. */
export function toCsv(table: ReportTable): string {
  const lines = [table.columns.map((c) => field(c.key)).join(',')];
  for (const row of table.rows) lines.push(table.columns.map((c) => field(row[c.key])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
