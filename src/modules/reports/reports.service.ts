import { CHANNELS } from '../../channels/channel-types.ts';
import type { Db } from '../../db/database.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { businessesRepository } from '../businesses/businesses.repository.ts';
import { parseList } from '../exports/exports.window.ts';
import { toCsv } from './reports.csv.ts';
import { reportsRepository, type ReportScope } from './reports.repository.ts';
import {
  REPORT_TABLES,
  type ReportBody,
  type ReportName,
  type ReportQuery,
  type ReportTable,
  type Unit,
} from './reports.schemas.ts';

/** The longest period a report covers, in days: a year, leap day included. */
export const MAX_DAYS = 366;
const DAY_MS = 86_400_000;

type Row = Record<string, string | number | null>;
const table = (columns: [key: string, label: string, unit: Unit][], rows: Row[]): ReportTable => ({
  columns: columns.map(([key, label, unit]) => ({ key, label, unit })),
  rows,
});

/** Milliseconds since the epoch of a `YYYY-MM-DD` that names a real day, else undefined. */
function dayMs(value: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const ms = Date.parse(`${value}T00:00:00Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value ? undefined : ms;
}

/** Every day from `since` to `until`, both included. */
function daysOf(since: string, until: string): string[] {
  const days: string[] = [];
  for (let ms = dayMs(since)!; ms <= dayMs(until)!; ms += DAY_MS) days.push(new Date(ms).toISOString().slice(0, 10));
  return days;
}

/** Seconds to the millisecond, as the figures are shown; null stays null. */
const seconds = (value: number | null | undefined) => (value == null ? null : Math.round(value * 1000) / 1000);
const ratio = (part: number, whole: number) => (whole === 0 ? null : part / whole);

/** Who answered first, as the speed report splits its figures. */
const RESPONDERS = ['ai', 'person', 'all'] as const;
const SENTIMENTS = ['positive', 'neutral', 'negative'] as const;

/**
 * The reports (docs/REPORTS.md): the period and filters checked, each report's SQL run, its rows laid
 * out as the tables the dashboard draws and the CSV sends, with every day (and hour) present.
 */
export class ReportsService {
  constructor(
    private readonly db: Db,
    /** The service's AI_DAILY_TOKEN_BUDGET, shown as the budget of a business without its own. */
    private readonly defaultDailyTokens: number,
  ) {}

  /** The report as JSON, or one of its tables as CSV with its file name. */
  async answer(
    businessId: string,
    report: ReportName,
    query: ReportQuery,
  ): Promise<{ json: ReportBody } | { csv: string; filename: string }> {
    const csv = query.format === 'csv';
    if (csv !== (query.table !== undefined))
      throw invalid(csv ? 'format=csv needs table=<name>' : 'table is only read with format=csv', [
        { location: 'querystring', path: csv ? '/table' : '/format' },
      ]);
    if (csv && !REPORT_TABLES[report].includes(query.table!))
      throw invalid(`the ${report} report has no table ${query.table}`, [
        { location: 'querystring', path: '/table', message: `allowed: ${REPORT_TABLES[report].join(', ')}` },
      ]);
    const body = await this.report(businessId, report, query);
    if (!csv) return { json: body };
    return {
      csv: toCsv(body.tables[query.table!]),
      filename: `${report}-${query.table}-${body.since}-${body.until}.csv`,
    };
  }

  async report(businessId: string, report: ReportName, query: ReportQuery): Promise<ReportBody> {
    const business = await businessesRepository.find(this.db, businessId);
    if (!business) throw notFound('business');
    const scope = this.scope(businessId, business.time_zone, query, await this.period(business.time_zone, query));
    const days = daysOf(scope.since, scope.until);
    const tables =
      report === 'volume'
        ? await this.volume(scope, days)
        : report === 'speed'
          ? await this.speed(scope, days)
          : report === 'ai'
            ? await this.ai(scope, days, business.ai_daily_token_budget)
            : report === 'team'
              ? await this.team(scope)
              : await this.sentiment(scope, days);
    return {
      report,
      since: scope.since,
      until: scope.until,
      time_zone: scope.timeZone,
      filters: {
        channel: scope.channels ?? null,
        team_id: scope.teamId ?? null,
        user_id: scope.userId ?? null,
        agent_id: scope.agentId ?? null,
      },
      tables,
    };
  }

  /**
   * The days asked for: `since` and `until`, or the last `last_days` days up to the business's today,
   * which the database tells in the business's zone (the zone names are PostgreSQL's).
   */
  private async period(timeZone: string, query: ReportQuery): Promise<{ since: string; until: string }> {
    if (query.last_days !== undefined) {
      if (query.since !== undefined || query.until !== undefined)
        throw invalid('send either last_days or since and until, not both', [
          { location: 'querystring', path: query.since !== undefined ? '/since' : '/until' },
        ]);
      const until = await reportsRepository.today(this.db, timeZone);
      const since = new Date(dayMs(until)! - (query.last_days - 1) * DAY_MS).toISOString().slice(0, 10);
      return { since, until };
    }
    for (const field of ['since', 'until'] as const)
      if (query[field] === undefined)
        throw invalid('a report needs since and until, or last_days', [{ location: 'querystring', path: `/${field}` }]);
    return { since: query.since!, until: query.until! };
  }

  /** The checked period and filters: real days, since not after until, at most MAX_DAYS, known channels. */
  private scope(
    businessId: string,
    timeZone: string,
    query: ReportQuery,
    period: { since: string; until: string },
  ): ReportScope {
    const since = dayMs(period.since);
    const until = dayMs(period.until);
    for (const [field, ms] of [
      ['since', since],
      ['until', until],
    ] as const)
      if (ms === undefined)
        throw invalid(`${field} must be a day, YYYY-MM-DD`, [{ location: 'querystring', path: `/${field}` }]);
    if (since! > until!) throw invalid('since must not be after until', [{ location: 'querystring', path: '/until' }]);
    if ((until! - since!) / DAY_MS + 1 > MAX_DAYS)
      throw invalid(`a report covers at most ${MAX_DAYS} days`, [{ location: 'querystring', path: '/until' }]);
    return {
      businessId,
      timeZone,
      since: period.since,
      until: period.until,
      channels: parseList(query.channel, CHANNELS, 'channel'),
      teamId: query.team_id,
      userId: query.user_id,
      agentId: query.agent_id,
    };
  }

  /**
   * One of a report's statements, in a transaction of its own planned for the period
   * (planForPeriod): a report's independent statements run side by side, on connections of the pool.
   */
  private planned<T>(statement: (db: Db, scope: ReportScope) => Promise<T>, scope: ReportScope): Promise<T> {
    return this.db.transaction().execute(async (db) => {
      await reportsRepository.planForPeriod(db);
      return statement(db, scope);
    });
  }

  private async volume(scope: ReportScope, days: string[]) {
    const [opened, messages] = await Promise.all([
      this.planned(reportsRepository.opened, scope),
      this.planned(reportsRepository.messages, scope),
    ]);
    const key = (day: string, channel: string) => `${day} ${channel}`;
    const cells = new Map<string, { conversations_opened: number; messages_in: number; messages_out: number }>();
    const cell = (day: string, channel: string) => {
      let found = cells.get(key(day, channel));
      if (!found) cells.set(key(day, channel), (found = { conversations_opened: 0, messages_in: 0, messages_out: 0 }));
      return found;
    };
    const hours = new Map<string, number>();
    for (const row of opened) cell(row.day, row.channel).conversations_opened += row.n;
    for (const row of messages) {
      if (row.day !== null && row.channel !== null) {
        const c = cell(row.day, row.channel);
        c.messages_in += row.messages_in;
        c.messages_out += row.messages_out;
      } else hours.set(`${row.weekday} ${row.hour}`, row.messages_in);
    }
    const channels = [...new Set([...cells.keys()].map((k) => k.slice(11)))].sort();
    const daily: Row[] = [];
    for (const day of days)
      for (const channel of channels)
        daily.push({ date: day, channel, ...(cells.get(key(day, channel)) ?? cell(day, channel)) });
    const byChannel: Row[] = channels.map((channel) => {
      const sum = { channel, conversations_opened: 0, messages_in: 0, messages_out: 0 };
      for (const day of days) {
        const c = cells.get(key(day, channel))!;
        sum.conversations_opened += c.conversations_opened;
        sum.messages_in += c.messages_in;
        sum.messages_out += c.messages_out;
      }
      return sum;
    });
    const busiest: Row[] = [];
    for (let weekday = 1; weekday <= 7; weekday++)
      for (let hour = 0; hour < 24; hour++)
        busiest.push({ weekday, hour, messages_in: hours.get(`${weekday} ${hour}`) ?? 0 });
    const counts: [string, string, Unit][] = [
      ['conversations_opened', 'Conversations opened', 'count'],
      ['messages_in', 'Messages received', 'count'],
      ['messages_out', 'Messages sent', 'count'],
    ];
    return {
      daily: table([['date', 'Day', 'date'], ['channel', 'Channel', 'text'], ...counts], daily),
      by_channel: table([['channel', 'Channel', 'text'], ...counts], byChannel),
      busiest_hours: table(
        [
          ['weekday', 'Weekday (Monday 1)', 'weekday'],
          ['hour', 'Hour', 'hour'],
          ['messages_in', 'Messages received', 'count'],
        ],
        busiest,
      ),
    };
  }

  private async speed(scope: ReportScope, days: string[]) {
    const rows = await this.planned(reportsRepository.speed, scope);
    const summary = new Map<string, Row>();
    const daily = new Map<string, Row>();
    for (const row of rows) {
      // Conversations nobody answered are in `all` only (grouping: 1 when the column is not grouped).
      const by = row.by_responder ? 'all' : row.answered_first_by;
      if (by === null) continue;
      const figures = {
        first_response_median: seconds(row.first_response?.[0]),
        first_response_p90: seconds(row.first_response?.[1]),
      };
      if (row.by_day)
        summary.set(by, {
          answered_first_by: by,
          conversations: row.conversations,
          ...figures,
          resolution_median: seconds(row.resolution?.[0]),
          resolution_p90: seconds(row.resolution?.[1]),
        });
      else daily.set(`${row.day} ${by}`, { date: row.day, answered_first_by: by, ...figures });
    }
    const none = { first_response_median: null, first_response_p90: null };
    const firstResponse: [string, string, Unit][] = [
      ['first_response_median', 'First response, median', 'seconds'],
      ['first_response_p90', 'First response, 90th percentile', 'seconds'],
    ];
    return {
      summary: table(
        [
          ['answered_first_by', 'Answered first by', 'text'],
          ['conversations', 'Conversations', 'count'],
          ...firstResponse,
          ['resolution_median', 'Resolution, median', 'seconds'],
          ['resolution_p90', 'Resolution, 90th percentile', 'seconds'],
        ],
        RESPONDERS.map(
          (by) =>
            summary.get(by) ?? {
              answered_first_by: by,
              conversations: 0,
              ...none,
              resolution_median: null,
              resolution_p90: null,
            },
        ),
      ),
      daily: table(
        [['date', 'Day', 'date'], ['answered_first_by', 'Answered first by', 'text'], ...firstResponse],
        days.flatMap((date) =>
          RESPONDERS.map((by) => daily.get(`${date} ${by}`) ?? { date, answered_first_by: by, ...none }),
        ),
      ),
    };
  }

  private async ai(scope: ReportScope, days: string[], ownBudget: number | null) {
    const [summary, reasons, tokens] = await Promise.all([
      this.planned(reportsRepository.ai, scope),
      this.planned(reportsRepository.handoffReasons, scope),
      this.planned(reportsRepository.tokens, scope),
    ]);
    const budget = ownBudget ?? this.defaultDailyTokens;
    const used = new Map(tokens.map((t) => [t.day, t.tokens]));
    return {
      summary: table(
        [
          ['conversations', 'Conversations the AI replied in', 'count'],
          ['handled_by_ai_only', 'Handled by the AI alone', 'count'],
          ['ai_only_share', 'Share handled by the AI alone', 'ratio'],
          ['handoffs', 'Handoffs to a person', 'count'],
          ['handoff_rate', 'Share handed off', 'ratio'],
          ['transfers_accepted', 'Transfers made', 'count'],
          ['transfers_rejected', 'Transfers refused', 'count'],
          ['transfers_without_target', 'Transfers without anyone to take them', 'count'],
          ['follow_ups_sent', 'Follow-ups sent', 'count'],
        ],
        [
          {
            conversations: summary.conversations,
            handled_by_ai_only: summary.handled_by_ai_only,
            ai_only_share: ratio(summary.handled_by_ai_only, summary.conversations),
            handoffs: summary.handoffs,
            handoff_rate: ratio(summary.handed_off_conversations, summary.conversations),
            transfers_accepted: summary.transfers_accepted,
            transfers_rejected: summary.transfers_rejected,
            transfers_without_target: summary.transfers_without_target,
            follow_ups_sent: summary.follow_ups_sent,
          },
        ],
      ),
      handoff_reasons: table(
        [
          ['reason', 'Reason', 'text'],
          ['count', 'Handoffs', 'count'],
        ],
        reasons,
      ),
      tokens: table(
        [
          ['date', 'Day (UTC)', 'date'],
          ['tokens', 'Tokens used', 'tokens'],
          ['budget', 'Daily budget', 'tokens'],
        ],
        // 0 is no bound: no line to draw.
        days.map((date) => ({ date, tokens: used.get(date) ?? 0, budget: budget === 0 ? null : budget })),
      ),
    };
  }

  private async team(scope: ReportScope) {
    const [replies, firsts, control, users] = await Promise.all([
      this.planned(reportsRepository.replies, scope),
      this.planned(reportsRepository.firstResponsesByPerson, scope),
      this.planned(reportsRepository.manualControl, scope),
      this.planned(reportsRepository.users, scope),
    ]);
    const rows = new Map<string, Row>();
    const row = (userId: string) => {
      let found = rows.get(userId);
      if (!found) {
        found = {
          user_id: userId,
          name: users.find((u) => u.id === userId)?.name ?? null,
          conversations_handled: 0,
          replies_sent: 0,
          first_response_median: null,
          manual_control_seconds: 0,
        };
        rows.set(userId, found);
      }
      return found;
    };
    // Everyone on the team has a row, a removed person only for what they did in the period.
    for (const user of users) if (!user.deleted) row(user.id);
    for (const r of replies)
      Object.assign(row(r.user_id), { conversations_handled: r.conversations_handled, replies_sent: r.replies_sent });
    for (const f of firsts) row(f.user_id).first_response_median = seconds(f.first_response_median);
    for (const c of control) row(c.user_id).manual_control_seconds = seconds(c.seconds);
    const list = [...rows.values()]
      .filter((r) => scope.userId === undefined || r.user_id === scope.userId)
      .sort(
        (a, b) => String(a.name).localeCompare(String(b.name)) || String(a.user_id).localeCompare(String(b.user_id)),
      );
    return {
      users: table(
        [
          ['user_id', 'Person', 'text'],
          ['name', 'Name', 'text'],
          ['conversations_handled', 'Conversations replied in', 'count'],
          ['replies_sent', 'Replies sent', 'count'],
          ['first_response_median', 'First response, median', 'seconds'],
          ['manual_control_seconds', 'Time in manual control', 'seconds'],
        ],
        list,
      ),
    };
  }

  private async sentiment(scope: ReportScope, days: string[]) {
    const rows = await this.planned(reportsRepository.sentiment, scope);
    const zero = () => ({ positive: 0, neutral: 0, negative: 0 });
    const daily = new Map(days.map((d) => [d, zero()]));
    const byAgent = new Map<string | null, { agent_name: string | null } & ReturnType<typeof zero>>();
    for (const r of rows) {
      const sentiment = r.sentiment.toLowerCase() as (typeof SENTIMENTS)[number];
      if (!SENTIMENTS.includes(sentiment)) continue;
      daily.get(r.day)![sentiment] += r.n;
      let agent = byAgent.get(r.agent_id);
      if (!agent) byAgent.set(r.agent_id, (agent = { agent_name: r.agent_name, ...zero() }));
      agent[sentiment] += r.n;
    }
    const counts: [string, string, Unit][] = [
      ['positive', 'Positive', 'count'],
      ['neutral', 'Neutral', 'count'],
      ['negative', 'Negative', 'count'],
    ];
    return {
      daily: table(
        [['date', 'Day', 'date'], ...counts],
        days.map((date) => ({ date, ...daily.get(date)! })),
      ),
      by_agent: table(
        [['agent_id', 'AI agent', 'text'], ['agent_name', 'Name', 'text'], ...counts],
        [...byAgent.entries()]
          .map(([agent_id, figures]) => ({ agent_id, ...figures }))
          .sort(
            (a, b) =>
              String(a.agent_name ?? '\uffff').localeCompare(String(b.agent_name ?? '\uffff')) ||
              String(a.agent_id).localeCompare(String(b.agent_id)),
          ),
      ),
    };
  }
}
