import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';

/**
 * The reports' SQL (docs/REPORTS.md). The messages of a period are read from their quarter-hour
 * figures (message_quarters, user_reply_quarters: migration 0052), a row per conversation and quarter;
 * first responses and resolutions from conversation_days (migration 0054), a row per conversation and
 * day; events through events_reports (business, type, time) and conversations through
 * conversations_opened.
 */

/** The period and filters every statement takes, already checked by the service. */
export interface ReportScope {
  businessId: string;
  timeZone: string;
  /** First and last day, `YYYY-MM-DD`, in the business's zone. */
  since: string;
  until: string;
  channels?: string[];
  teamId?: string;
  userId?: string;
  agentId?: string;
}

/** The period's first instant. */
const start = (s: ReportScope) => sql`((${s.since}::date)::timestamp at time zone ${s.timeZone})`;
/** The instant after the period: midnight after its last day. */
const end = (s: ReportScope) => sql`((${s.until}::date + 1)::timestamp at time zone ${s.timeZone})`;
/** `created_at` of `alias` within the period. */
const within = (s: ReportScope, alias: string) =>
  sql`${sql.ref(`${alias}.created_at`)} >= ${start(s)} and ${sql.ref(`${alias}.created_at`)} < ${end(s)}`;
/** The day, in the business's zone, of `alias`'s `created_at`, as `YYYY-MM-DD`. */
const dayOf = (s: ReportScope, alias: string) =>
  sql`((${sql.ref(`${alias}.created_at`)} at time zone ${s.timeZone})::date)::text`;

/** The filters on a conversation's own columns (alias `c`); empty when none is set. */
function conversationConditions(s: ReportScope): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  if (s.channels) conditions.push(sql`c.channel = any(${s.channels}::text[])`);
  if (s.teamId) conditions.push(sql`c.team_id = ${s.teamId}`);
  if (s.userId) conditions.push(sql`c.assigned_user_id = ${s.userId}`);
  if (s.agentId) conditions.push(sql`c.agent_id = ${s.agentId}`);
  return conditions;
}

/**
 * `and <the row's conversation matches the filters>` for a row `alias` with `conversation_id`; nothing
 * without filters, so the unfiltered reports join no conversation.
 */
function ofConversations(s: ReportScope, alias: string) {
  const conditions = conversationConditions(s);
  if (conditions.length === 0) return sql``;
  return sql`and exists (select 1 from conversations c
    where c.business_id = ${sql.ref(`${alias}.business_id`)} and c.id = ${sql.ref(`${alias}.conversation_id`)}
      and ${sql.join(conditions, sql` and `)})`;
}

/** A message the reports count: as the exports, no test contact, internal or group chat, or web-client copy. */
const counted = (alias: string) => sql`not ${sql.ref(`${alias}.excluded`)} and not ${sql.ref(`${alias}.duplicate`)}`;

const HANDOFFS = sql`('manual_control_activated', 'transfer_accepted')`;

/** The period's quarters (alias `q`) of the conversations the filters select. */
const quarters = (s: ReportScope, table: 'message_quarters' | 'user_reply_quarters') => sql`
  ${sql.table(table)} q
  where q.business_id = ${s.businessId} and q.quarter >= ${start(s)} and q.quarter < ${end(s)} ${ofConversations(s, 'q')}`;

/**
 * Each conversation's first contact message in the period, the first answer after it by the AI or a
 * person (whoever and whenever) and its first resolution after it; the base of the speed and team
 * figures. Kept per conversation and day in conversation_days: the period's row of each conversation
 * whose previous day is before the period, or that has none.
 */
const firstResponses = (s: ReportScope) => sql`
  answered as (
    select d.conversation_id, d.day,
      case when d.reply_sender is null then null when d.reply_sender = 'ai_agent' then 'ai' else 'person' end
        as answered_first_by,
      d.reply_sender as sender_type, d.reply_user as user_id,
      extract(epoch from d.reply_at - d.asked_at)::float8 as first_response,
      extract(epoch from d.resolved_at - d.asked_at)::float8 as resolution
    from conversation_days d
    where d.business_id = ${s.businessId} and d.day between ${s.since}::date and ${s.until}::date
      and d.asked_at is not null and (d.previous_day is null or d.previous_day < ${s.since}::date)
      ${ofConversations(s, 'd')}
  )`;

export const reportsRepository = {
  /**
   * Settings of a report's transaction. A plan for its own period: the statements are named
   * (prepared-statements.ts), and PostgreSQL's generic plan after five runs, made without the
   * period, chose scans that took a year's volume from 0.9 s to 5 s. Memory for a year's sorts and
   * groups, which spilled to disk at the default 4 MB.
   */
  async planForPeriod(db: Db) {
    await sql`select set_config('plan_cache_mode', 'force_custom_plan', true), set_config('work_mem', '32MB', true)`.execute(
      db,
    );
  },

  /** The business's current day, `YYYY-MM-DD`, in its zone. */
  async today(db: Db, timeZone: string) {
    const { rows } = await sql<{ today: string }>`
      select ((now() at time zone ${timeZone})::date)::text as today`.execute(db);
    return rows[0].today;
  },

  /** Conversations opened per day and channel. */
  async opened(db: Db, s: ReportScope) {
    const { rows } = await sql<{ day: string; channel: string; n: number }>`
      select ${dayOf(s, 'c')} as day, c.channel, count(*)::int as n
      from conversations c
      where c.business_id = ${s.businessId} and ${within(s, 'c')} and not c.is_internal and not c.is_group
        and not exists (select 1 from contacts k where k.business_id = c.business_id and k.id = c.contact_id and k.is_test)
        ${conversationConditions(s).length ? sql`and ${sql.join(conversationConditions(s), sql` and `)}` : sql``}
      group by 1, 2`.execute(db);
    return rows;
  },

  /**
   * Messages in and out per day and channel and per weekday and hour (one scan of the period's
   * quarters, two groupings).
   */
  async messages(db: Db, s: ReportScope) {
    const { rows } = await sql<{
      day: string | null;
      channel: string | null;
      weekday: number | null;
      hour: number | null;
      messages_in: number;
      messages_out: number;
    }>`
      select day, channel, weekday, hour, sum(messages_in)::int as messages_in, sum(messages_out)::int as messages_out
      from (
        select (h.local::date)::text as day, h.channel, extract(isodow from h.local)::int as weekday,
          extract(hour from h.local)::int as hour, h.messages_in, h.messages_out
        from (
          -- Local hours first: one zone conversion per quarter and a hash of at most 24 groups a day and
          -- channel, rather than sorting every quarter by its day.
          select date_trunc('hour', q.quarter at time zone ${s.timeZone}) as local, q.channel,
            sum(q.messages_in) as messages_in, sum(q.messages_out) as messages_out
          from ${quarters(s, 'message_quarters')}
          group by 1, 2
        ) h
      ) m
      group by grouping sets ((day, channel), (weekday, hour))`.execute(db);
    return rows;
  },

  /**
   * Medians and 90th percentiles of first response and resolution by who answered first, and of first
   * response per day (the days' resolutions are not shown): two groupings of one read of the period's
   * firsts (a CTE read twice is computed once), each pair of percentiles from one sort.
   */
  async speed(db: Db, s: ReportScope) {
    const { rows } = await sql<{
      day: string | null;
      answered_first_by: string | null;
      by_day: number;
      by_responder: number;
      conversations: number;
      first_response: [number, number] | null;
      resolution: [number, number] | null;
    }>`
      with ${firstResponses(s)}
      select null as day, answered_first_by, 1 as by_day, grouping(answered_first_by) as by_responder,
        count(*)::int as conversations,
        percentile_cont(array[0.5, 0.9]) within group (order by first_response) as first_response,
        percentile_cont(array[0.5, 0.9]) within group (order by resolution) as resolution
      from answered
      group by grouping sets ((answered_first_by), ())
      union all
      select day::text, answered_first_by, 0, grouping(answered_first_by), count(*)::int,
        percentile_cont(array[0.5, 0.9]) within group (order by first_response), null
      from answered
      group by grouping sets ((day, answered_first_by), (day))`.execute(db);
    return rows;
  },

  /** The AI's figures: its conversations, those it handled alone, handoffs, transfers, follow-ups. */
  async ai(db: Db, s: ReportScope) {
    const { rows } = await sql<{
      conversations: number;
      handled_by_ai_only: number;
      handed_off_conversations: number;
      handoffs: number;
      transfers_accepted: number;
      transfers_rejected: number;
      transfers_without_target: number;
      follow_ups_sent: number;
    }>`
      with replies as (
        -- A conversation the AI replied in is its first AI day of the period, one a person replied in its
        -- first person's day: a row each, from one range of conversation_days, without grouping.
        select * from (
          select d.conversation_id,
            d.ai_replied and (d.previous_ai_day is null or d.previous_ai_day < ${s.since}::date) as ai,
            d.person_replied and (d.previous_person_day is null or d.previous_person_day < ${s.since}::date) as person
          from conversation_days d
          where d.business_id = ${s.businessId} and d.day between ${s.since}::date and ${s.until}::date
            ${ofConversations(s, 'd')}
        ) r
        where r.ai or r.person
      ),
      follow_ups as (
        -- Every follow-up the business's AI sent, each probed for its message's time: they are a few of
        -- its runs, and a run's own time is not its message's.
        select count(*)::int as n from ai_runs fu
        join messages m on m.business_id = fu.business_id and m.id = fu.reply_message_id
        where fu.business_id = ${s.businessId} and fu.kind = 'follow_up' and fu.status = 'replied'
          and ${within(s, 'm')} and ${counted('m')} ${ofConversations(s, 'm')}
      ),
      ev as (
        select e.conversation_id, e.type from events e
        where e.business_id = ${s.businessId} and ${within(s, 'e')} and not e.excluded
          and e.type in ('manual_control_activated', 'transfer_accepted', 'transfer_rejected', 'transfer_fallback_required')
          ${ofConversations(s, 'e')}
      ),
      by_conversation as (
        select conversation_id, bool_or(type = 'manual_control_activated') as manual,
          bool_or(type in ${HANDOFFS}) as handed_off
        from ev group by conversation_id
      )
      select
        (select count(*) from replies where ai)::int as conversations,
        (select count(*) from replies r
         where r.ai and not exists (select 1 from replies p where p.person and p.conversation_id = r.conversation_id)
           and not exists (select 1 from by_conversation b where b.conversation_id = r.conversation_id and b.manual))::int
          as handled_by_ai_only,
        (select count(*) from replies r join by_conversation b using (conversation_id) where r.ai and b.handed_off)::int
          as handed_off_conversations,
        (select count(*) from ev where type in ${HANDOFFS})::int as handoffs,
        (select count(*) from ev where type = 'transfer_accepted')::int as transfers_accepted,
        (select count(*) from ev where type = 'transfer_rejected')::int as transfers_rejected,
        (select count(*) from ev where type = 'transfer_fallback_required')::int as transfers_without_target,
        (select n from follow_ups) as follow_ups_sent`.execute(db);
    return rows[0];
  },

  /** Handoffs of the period by the reason their event gives (null when it gives none). */
  async handoffReasons(db: Db, s: ReportScope) {
    const { rows } = await sql<{ reason: string | null; count: number }>`
      select e.data->>'reason' as reason, count(*)::int as count from events e
      where e.business_id = ${s.businessId} and ${within(s, 'e')} and not e.excluded and e.type in ${HANDOFFS}
        ${ofConversations(s, 'e')}
      group by 1 order by 2 desc, 1 nulls last`.execute(db);
    return rows;
  },

  /** Tokens the business's AI agents used per UTC day of the period (days without any are absent). */
  async tokens(db: Db, s: ReportScope) {
    const { rows } = await sql<{ day: string; tokens: number }>`
      select day::text as day, tokens::float8 as tokens from ai_token_usage
      where business_id = ${s.businessId} and day between ${s.since}::date and ${s.until}::date`.execute(db);
    return rows;
  },

  /** Each person's replies and the conversations they replied in. */
  async replies(db: Db, s: ReportScope) {
    const { rows } = await sql<{ user_id: string; replies_sent: number; conversations_handled: number }>`
      select q.user_id, sum(q.replies)::int as replies_sent, count(distinct q.conversation_id)::int as conversations_handled
      from ${quarters(s, 'user_reply_quarters')}
      group by q.user_id`.execute(db);
    return rows;
  },

  /** Each person's median first response, of the conversations they answered first. */
  async firstResponsesByPerson(db: Db, s: ReportScope) {
    const { rows } = await sql<{ user_id: string; first_response_median: number }>`
      with ${firstResponses(s)}
      select user_id, percentile_cont(0.5) within group (order by first_response) as first_response_median
      from answered where sender_type = 'human' and user_id is not null
      group by user_id`.execute(db);
    return rows;
  },

  /**
   * Time under each person's manual control, to its release or the period's end: a release after the
   * end counts as none, so one range of the period's activations and releases gives both.
   */
  async manualControl(db: Db, s: ReportScope) {
    const { rows } = await sql<{ user_id: string; seconds: number }>`
      with spans as (
        select e.type, e.actor_type, e.user_id, e.created_at,
          min(e.created_at) filter (where e.type = 'manual_control_released') over (partition by e.conversation_id
            order by e.created_at range between '1 microsecond' following and unbounded following) as released_at
        from events e
        where e.business_id = ${s.businessId} and ${within(s, 'e')} and not e.excluded
          and e.type in ('manual_control_activated', 'manual_control_released') ${ofConversations(s, 'e')}
      )
      select user_id, sum(extract(epoch from least(coalesce(released_at, 'infinity'), ${end(s)}, now()) - created_at))::float8
          as seconds
      from spans
      where type = 'manual_control_activated' and actor_type = 'human' and user_id is not null
      group by user_id`.execute(db);
    return rows;
  },

  /** The business's people, removed ones included. */
  async users(db: Db, s: ReportScope) {
    const { rows } = await sql<{ id: string; name: string; deleted: boolean }>`
      select id, name, deleted_at is not null as deleted from users where business_id = ${s.businessId}`.execute(db);
    return rows;
  },

  /** Sentiments analysed in the period, per day and per AI agent. */
  async sentiment(db: Db, s: ReportScope) {
    const { rows } = await sql<{
      day: string;
      agent_id: string | null;
      agent_name: string | null;
      sentiment: string;
      n: number;
    }>`
      select t.day, t.agent_id, a.name as agent_name, t.sentiment, t.n from (
        select ${dayOf(s, 'e')} as day, e.agent_id, e.data->>'sentiment' as sentiment, count(*)::int as n
        from events e
        where e.business_id = ${s.businessId} and ${within(s, 'e')} and not e.excluded and e.type = 'sentiment_analyzed'
          ${ofConversations(s, 'e')}
        group by 1, 2, 3) t
      left join agents a on a.business_id = ${s.businessId} and a.id = t.agent_id`.execute(db);
    return rows;
  },
};
