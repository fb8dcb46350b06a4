// A report's period and filters live in the page's address, so a report can be shared and survives a
// reload: `?period=30` (the last 7, 30 or 90 days up to today) or `?since=…&until=…`, and the filters.
// A preset asks the service for `last_days`: today is the business's, in its time zone, not the browser's.
import type { ReportQuery } from './report-api';

export const PRESETS = ['7', '30', '90'] as const;
export const DEFAULT_PERIOD = '30';
export const FILTER_KEYS = ['channel', 'team_id', 'user_id', 'agent_id'] as const;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

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
  const query: ReportQuery = custom ? { since, until } : { last_days: Number(period) };
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
    params.set('since', query.since ?? '');
    params.set('until', query.until ?? '');
  } else params.set('period', period);
  for (const key of FILTER_KEYS) {
    const value = query[key];
    if (value) params.set(key, value);
  }
  return params;
}
