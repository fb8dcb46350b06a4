import { Type, type Static } from 'typebox';
import { CHANNELS } from '../../channels/channel-types.ts';
import { Nullable, OneOf, Uuid } from '../../http/common.schemas.ts';

export const REPORTS = ['volume', 'speed', 'ai', 'team', 'sentiment'] as const;
export type ReportName = (typeof REPORTS)[number];

/** The tables of each report, in the order the body lists them (docs/REPORTS.md defines every figure). */
export const REPORT_TABLES: Record<ReportName, readonly string[]> = {
  volume: ['daily', 'by_channel', 'busiest_hours'],
  speed: ['summary', 'daily'],
  ai: ['summary', 'handoff_reasons', 'tokens'],
  team: ['users'],
  sentiment: ['daily', 'by_agent'],
};

export const UNITS = ['count', 'seconds', 'ratio', 'tokens', 'date', 'text', 'hour', 'weekday'] as const;
export type Unit = (typeof UNITS)[number];

const Date = Type.String({ format: 'date', description: 'YYYY-MM-DD, a day in the business time zone' });

export const ReportParams = Type.Object(
  { report: OneOf(REPORTS, { description: 'which report; another name answers 400' }) },
  { additionalProperties: false },
);
export const BusinessReportParams = Type.Object(
  { bid: Uuid, report: OneOf(REPORTS, { description: 'which report; another name answers 400' }) },
  { additionalProperties: false },
);

export const ReportQuery = Type.Object(
  {
    since: Type.Optional({ ...Date, description: 'YYYY-MM-DD, the first day counted, in the business time zone' }),
    until: Type.Optional({
      ...Date,
      description: 'YYYY-MM-DD, the last day counted (inclusive); at most 366 days from since',
    }),
    last_days: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 366,
        description: "instead of since and until: the last N days, today (the business's, in its zone) included",
      }),
    ),
    channel: Type.Optional(
      Type.String({ maxLength: 200, description: `comma-separated channels (${CHANNELS.join(', ')}); default all` }),
    ),
    team_id: Type.Optional({
      ...Uuid,
      description: "only conversations assigned to this team (another business's: none)",
    }),
    user_id: Type.Optional({ ...Uuid, description: 'only conversations assigned to this person' }),
    agent_id: Type.Optional({ ...Uuid, description: 'only conversations of this AI agent' }),
    format: Type.Optional(OneOf(['json', 'csv'] as const, { description: 'csv: one table, named by `table`' })),
    table: Type.Optional(
      Type.String({ maxLength: 40, description: "with format=csv, the table to send (one of the report's tables)" }),
    ),
  },
  { additionalProperties: false },
);
export type ReportQuery = Static<typeof ReportQuery>;

const Column = Type.Object({
  key: Type.String(),
  label: Type.String(),
  unit: OneOf(UNITS),
});
const Cell = Type.Union([Type.String(), Type.Number(), Type.Null()]);

export const ReportBody = Type.Object(
  {
    report: OneOf(REPORTS),
    since: Date,
    until: Date,
    time_zone: Type.String({ description: 'the business time zone the days and hours are counted in' }),
    filters: Type.Object({
      channel: Nullable(Type.Array(Type.String())),
      team_id: Nullable(Uuid),
      user_id: Nullable(Uuid),
      agent_id: Nullable(Uuid),
    }),
    tables: Type.Record(
      Type.String(),
      Type.Object({
        columns: Type.Array(Column),
        rows: Type.Array(Type.Record(Type.String(), Cell), { description: 'one object per row, by column key' }),
      }),
      { description: 'each table of the report by name: the rows of one chart, as its CSV has them' },
    ),
  },
  { description: 'A report: its period, filters and tables' },
);
export type ReportBody = Static<typeof ReportBody>;
export type ReportTable = ReportBody['tables'][string];

/** What both surfaces say of the reports. */
export const reportsDescription =
  'The figures of one report for the days `since` to `until` (inclusive, at most 366, in the business time ' +
  "zone), or for the last `last_days` days up to the business's today in its zone (the body names the days), " +
  'for the conversations the filters select (channel, assigned team, assigned person, AI agent). ' +
  'Reports: `volume` (tables daily, by_channel, busiest_hours), `speed` (summary, daily), `ai` (summary, ' +
  'handoff_reasons, tokens), `team` (users), `sentiment` (daily, by_agent); every figure is defined in ' +
  'docs/REPORTS.md. `format=csv&table=<name>` answers one table as text/csv (a header row of the column keys, ' +
  'RFC 4180 quoting). An unknown report, a bad date or range, both period forms or neither, an unknown ' +
  'channel or table answers 400.';
