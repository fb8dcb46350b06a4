// The reports the session API answers (`GET /dashboard/api/reports/{report}`): each is a set of named
// tables whose columns say their unit, so the page renders any column it is given.
import { api } from '../../api/client';

export const REPORTS = ['volume', 'speed', 'ai', 'team', 'sentiment'] as const;
export type ReportName = (typeof REPORTS)[number];

export const REPORT_TITLES: Record<ReportName, string> = {
  volume: 'Volume',
  speed: 'Response times',
  ai: 'AI agents',
  team: 'Team',
  sentiment: 'Sentiment',
};

export type Unit = 'count' | 'seconds' | 'ratio' | 'tokens' | 'date' | 'text' | 'hour' | 'weekday';
export type Value = string | number | null;

export interface Column {
  key: string;
  label: string;
  /** One of `Unit`; a unit the page does not know is shown as text. */
  unit: string;
}

export interface ReportTable {
  columns: Column[];
  rows: Record<string, Value>[];
}

export interface Report {
  report: string;
  since: string;
  until: string;
  time_zone: string;
  tables: Record<string, ReportTable>;
}

/** The query of a report: its period and filters, as the page's address and the API both carry them. */
export interface ReportQuery {
  /** Custom dates, both or neither. */
  since?: string;
  until?: string;
  /** Else a preset: the last N days up to the business's today, which the service counts in the business's zone. */
  last_days?: number;
  channel?: string;
  team_id?: string;
  user_id?: string;
  agent_id?: string;
}

/** A query as the address of a request carries it, without its empty fields. */
export function reportParams(query: ReportQuery): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query) as [string, string | number | undefined][])
    if (value) params.set(key, String(value));
  return params;
}

export function readReport(report: ReportName, query: ReportQuery) {
  return api.GET('/dashboard/api/reports/{report}', { params: { path: { report }, query } });
}

/**
 * The address of one table as CSV. A plain link: the browser sends the session's cookie with a
 * same-origin GET, and reads need no CSRF token.
 */
export function csvHref(report: ReportName, query: ReportQuery, table: string): string {
  const params = reportParams(query);
  params.set('format', 'csv');
  params.set('table', table);
  return `/dashboard/api/reports/${report}?${params.toString()}`;
}
