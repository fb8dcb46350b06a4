// A report's period and filters live in the page's address, so a report can be shared and survives a
// reload: `?period=30` (the last 7, 30 or 90 days up to today) or `?since=…&until=…`, and the filters.
import type { ReportQuery } from './report-api';

export const PRESETS = ['7', '30', '90'] as const;
export const DEFAULT_PERIOD = '30';
export const FILTER_KEYS = ['channel', 'team_id', 'user_id', 'agent_id'] as const;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A day as the API reads it (YYYY-MM-DD), in the browser's time zone. */
export function isoDay(date: Date): string {
  const month = String(date.getMonth() + 1).padStart(2, '0');
  return `${date.getFullYear()}-${month}-${String(date.getDate()).padStart(2, '0')}`;
}

/** The last `days` days, today included. */
export function lastDays(days: number, today = new Date()): { since: string; until: string } {
  const since = new Date(today.getFullYear(), today.getMonth(), today.getDate() - (days - 1));
  return { since: isoDay(since), until: isoDay(today) };
}

/** What the address asks for: a preset period or custom dates (else the default), and the filters. */
export interface Selection {
  period: string;
  query: ReportQuery;
}

export function readSelection(params: URLSearchParams): Selection {
  const since = params.get('since') ?? '';
  const until = params.get('until') ?? '';
  const custom = DAY.test(since) && DAY.test(until);
  const asked = params.get('period') ?? '';
  const period = custom ? 'custom' : (PRESETS as readonly string[]).includes(asked) ? asked : DEFAULT_PERIOD;
  const query: ReportQuery = custom ? { since, until } : lastDays(Number(period));
  for (const key of FILTER_KEYS) {
    const value = params.get(key);
    if (value) query[key] = value;
  }
  return { period, query };
}

/** The address's query for a selection: a preset keeps its name, so a shared link moves with the days. */
export function writeSelection(period: string, query: ReportQuery): URLSearchParams {
  const params = new URLSearchParams();
  if (period === 'custom') {
    params.set('since', query.since);
    params.set('until', query.until);
  } else params.set('period', period);
  for (const key of FILTER_KEYS) {
    const value = query[key];
    if (value) params.set(key, value);
  }
  return params;
}
