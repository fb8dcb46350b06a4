// Each report's charts, tiles and tables. Series are read from the tables' columns (every column of
// figures is one), so a column the API adds shows up without a change here.
import type { ReactNode } from 'react';
import { useId } from 'react';
import { Bars, Lines, PALETTE, type Point, type Series } from './charts';
import { formatValue, isFigure } from './format';
import { HeatMap } from './heat-map';
import type { Report, ReportName, ReportTable, Value } from './report-api';
import { CsvLink, DataTable } from './report-table';
import styles from './reports.module.css';

/** A table's link as CSV. */
type CsvFor = (table: string) => string;

/**
 * A chart (or tiles) with its CSV; with `data`, the chart beside the table of the same rows (or a
 * note that the period has none) under `caption`.
 */
function Figure({
  title,
  table,
  csv,
  chart,
  data,
  caption,
  split = true,
}: {
  title: string;
  table: string;
  csv: CsvFor;
  chart: ReactNode;
  data?: ReportTable;
  caption?: string;
  /** A chart and its table side by side; false for what is its own table (the heat map, tiles). */
  split?: boolean;
}) {
  const id = useId();
  return (
    <section className={styles.figure} aria-labelledby={id}>
      <div className={styles.figureHead}>
        <h2 id={id}>{title}</h2>
        <CsvLink href={csv(table)} caption={title} />
      </div>
      <div className={split ? styles.figureBody : undefined}>
        {data ? (
          <>
            {data.rows.length > 0 ? chart : <p className={styles.muted}>No data in this period.</p>}
            <DataTable table={data} caption={caption ?? title} />
          </>
        ) : (
          chart
        )}
      </div>
    </section>
  );
}

/** The columns of figures of a table, as chart series. */
function figureSeries(table: ReportTable, only?: (unit: string) => boolean): Series[] {
  return table.columns
    .filter((column) => isFigure(column.unit) && (!only || only(column.unit)))
    .map((column) => ({ key: column.key, name: column.label }));
}

/**
 * Rows of (category, group, value) as one point per category with a value per group: the daily rows
 * of each channel become a day's stacked bar.
 */
function pivot(
  rows: Record<string, Value>[],
  category: string,
  group: string,
  value: (row: Record<string, Value>) => number,
) {
  const points = new Map<string, Point>();
  const groups: string[] = [];
  for (const row of rows) {
    const at = String(row[category]);
    const name = String(row[group]);
    if (!groups.includes(name)) groups.push(name);
    const point = points.get(at) ?? { [category]: row[category] ?? null };
    point[name] = ((point[name] as number | undefined) ?? 0) + value(row);
    points.set(at, point);
  }
  return { points: [...points.values()], groups };
}

const numberOf = (key: string) => (row: Record<string, Value>) => Number(row[key] ?? 0);

function column(table: ReportTable, key: string) {
  return table.columns.find((item) => item.key === key);
}

function VolumeReport({ tables, csv }: { tables: Report['tables']; csv: CsvFor }) {
  const { daily, by_channel: byChannel, busiest_hours: busiest } = tables;
  const perDay =
    daily &&
    pivot(daily.rows, 'date', 'channel', (row) => numberOf('messages_in')(row) + numberOf('messages_out')(row));
  return (
    <>
      {daily && perDay && (
        <Figure
          title="Messages per day, by channel"
          table="daily"
          csv={csv}
          caption="Conversations and messages per day and channel"
          data={daily}
          chart={
            <Bars
              label="Messages received and sent per day, stacked by channel"
              data={perDay.points}
              category="date"
              categoryUnit="date"
              unit="count"
              stacked
              series={perDay.groups.map((group) => ({ key: group, name: formatValue(group, 'text', 'channel') }))}
            />
          }
        />
      )}
      {byChannel && (
        <Figure
          title="By channel"
          table="by_channel"
          csv={csv}
          caption="Conversations and messages per channel"
          data={byChannel}
          chart={
            <Bars
              label="Conversations and messages per channel"
              data={byChannel.rows}
              category="channel"
              unit="count"
              series={figureSeries(byChannel)}
            />
          }
        />
      )}
      {busiest && (
        <Figure
          title="Busiest hours"
          table="busiest_hours"
          csv={csv}
          split={false}
          chart={
            <HeatMap
              table={busiest}
              valueKey="messages_in"
              caption="Messages received by weekday and hour (darker is busier)"
            />
          }
        />
      )}
    </>
  );
}

function SpeedReport({ tables, csv }: { tables: Report['tables']; csv: CsvFor }) {
  const { summary, daily } = tables;
  // One point per day with each group's median and 90th percentile; a group no one answered that day has none.
  const groups = daily ? [...new Set(daily.rows.map((row) => String(row.answered_first_by)))] : [];
  const days = daily ? [...new Set(daily.rows.map((row) => String(row.date)))] : [];
  const points = days.map((date) => {
    const point: Point = { date };
    for (const group of groups) {
      const row = daily?.rows.find((item) => item.date === date && item.answered_first_by === group);
      point[`${group}_median`] = row?.first_response_median ?? null;
      point[`${group}_p90`] = row?.first_response_p90 ?? null;
    }
    return point;
  });
  const groupName = (group: string) => formatValue(group, 'text', 'answered_first_by');
  return (
    <>
      {summary && (
        <Figure
          title="Response and resolution times"
          table="summary"
          csv={csv}
          caption="Response and resolution times, by who answered first"
          data={summary}
          chart={
            <Bars
              label="Median and 90th percentile of first response and resolution times, AI and people"
              data={summary.rows}
              category="answered_first_by"
              unit="seconds"
              series={figureSeries(summary, (unit) => unit === 'seconds')}
            />
          }
        />
      )}
      {daily && (
        <Figure
          title="First response time per day"
          table="daily"
          csv={csv}
          caption="First response time per day, by who answered first"
          data={daily}
          chart={
            <Lines
              label="Median (solid) and 90th percentile (dashed) of the first response time per day"
              data={points}
              category="date"
              unit="seconds"
              series={groups.flatMap((group, index) => [
                { key: `${group}_median`, name: `${groupName(group)} median`, color: PALETTE[index] },
                { key: `${group}_p90`, name: `${groupName(group)} p90`, color: PALETTE[index], dashed: true },
              ])}
            />
          }
        />
      )}
    </>
  );
}

/** A table's one row as tiles: a label and a figure each. */
function Tiles({ table }: { table: ReportTable }) {
  const row = table.rows[0] ?? {};
  return (
    <dl className={styles.tiles}>
      {table.columns.map((item) => (
        <div key={item.key} className={styles.tile}>
          <dt>{item.label}</dt>
          <dd>{formatValue(row[item.key], item.unit, item.key)}</dd>
        </div>
      ))}
    </dl>
  );
}

function AiReport({ tables, csv }: { tables: Report['tables']; csv: CsvFor }) {
  const { summary, handoff_reasons: reasons, tokens } = tables;
  return (
    <>
      {summary && (
        <Figure
          title="AI agents at a glance"
          table="summary"
          csv={csv}
          split={false}
          chart={<Tiles table={summary} />}
        />
      )}
      {reasons && (
        <Figure
          title="Handoff reasons"
          table="handoff_reasons"
          csv={csv}
          caption="Handoffs to a person, by reason"
          data={reasons}
          chart={
            <Bars
              label="Handoffs to a person, by reason"
              data={reasons.rows}
              category="reason"
              unit="count"
              horizontal
              series={figureSeries(reasons)}
            />
          }
        />
      )}
      {tokens && (
        <Figure
          title="Tokens per day"
          table="tokens"
          csv={csv}
          caption="Tokens used per day, and the daily budget"
          data={tokens}
          chart={
            <Lines
              label="Tokens used per day (solid) against the daily budget (dashed)"
              data={tokens.rows}
              category="date"
              unit="tokens"
              series={figureSeries(tokens).map((series) => ({ ...series, dashed: series.key === 'budget' }))}
            />
          }
        />
      )}
    </>
  );
}

function TeamReport({ tables, csv }: { tables: Report['tables']; csv: CsvFor }) {
  const { users } = tables;
  if (!users) return null;
  return (
    <Figure
      title="Team members"
      table="users"
      csv={csv}
      caption="Conversations, replies and response times per team member"
      data={users}
      chart={
        <Bars
          label="Conversations handled and replies sent per team member"
          data={users.rows}
          category="name"
          unit="count"
          horizontal
          series={figureSeries(users, (unit) => unit === 'count')}
        />
      }
    />
  );
}

/** Positive, neutral and negative in colours that keep their meaning and stay apart for colour-blind readers. */
const SENTIMENT_COLOURS: Record<string, string> = { positive: '#009E73', neutral: '#56B4E9', negative: '#D55E00' };

function sentimentSeries(table: ReportTable): Series[] {
  return figureSeries(table).map((series) => ({ ...series, color: SENTIMENT_COLOURS[series.key] }));
}

function SentimentReport({ tables, csv }: { tables: Report['tables']; csv: CsvFor }) {
  const { daily, by_agent: byAgent } = tables;
  return (
    <>
      {daily && (
        <Figure
          title="Sentiment per day"
          table="daily"
          csv={csv}
          caption="Conversations by sentiment per day"
          data={daily}
          chart={
            <Bars
              label="Conversations by sentiment per day, stacked"
              data={daily.rows}
              category="date"
              categoryUnit="date"
              unit="count"
              stacked
              series={sentimentSeries(daily)}
            />
          }
        />
      )}
      {byAgent && (
        <Figure
          title="Sentiment per AI agent"
          table="by_agent"
          csv={csv}
          caption="Conversations by sentiment per AI agent"
          data={byAgent}
          chart={
            <Bars
              label="Conversations by sentiment per AI agent, stacked"
              data={byAgent.rows}
              category={column(byAgent, 'agent_name') ? 'agent_name' : 'agent_id'}
              unit="count"
              stacked
              horizontal
              series={sentimentSeries(byAgent)}
            />
          }
        />
      )}
    </>
  );
}

const VIEWS: Record<ReportName, (props: { tables: Report['tables']; csv: CsvFor }) => ReactNode> = {
  volume: VolumeReport,
  speed: SpeedReport,
  ai: AiReport,
  team: TeamReport,
  sentiment: SentimentReport,
};

export function ReportView({ name, report, csv }: { name: ReportName; report: Report; csv: CsvFor }) {
  const View = VIEWS[name];
  return <View tables={report.tables} csv={csv} />;
}

/** Whether a report counts nothing but zeros: nothing happened in the period. */
export function isEmpty(report: Report): boolean {
  return Object.values(report.tables).every((table) =>
    table.rows.every((row) => table.columns.every((item) => item.unit !== 'count' || !Number(row[item.key]))),
  );
}
