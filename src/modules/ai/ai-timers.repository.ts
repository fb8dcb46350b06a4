import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { inStorageOrder, type AiRunRow } from './ai-runs.repository.ts';

/** A conversation a domain event touched, with its agent's timer settings. */
export interface TimerCandidate {
  conversation_id: string;
  agent_id: string;
  follow_up_settings: Record<string, unknown>;
  inactivity_run_settings: Record<string, unknown>;
  activation_rules: Record<string, unknown>;
}

/** What a timer job reads first: the conversation, its agent's settings, and how long it has been quiet. */
export interface TimerState {
  closed_at: string | null;
  manual_control: boolean;
  manual_control_locked: boolean;
  agent_id: string | null;
  /** Seconds since its last message (or its creation), on the database's clock. */
  quiet_seconds: number;
  follow_up_settings: Record<string, unknown> | null;
  inactivity_run_settings: Record<string, unknown> | null;
  activation_rules: Record<string, unknown> | null;
}

/** A recent message, as the timers read it. */
export interface TimerMessage {
  id: string;
  direction: 'inbound' | 'outbound';
  sender_type: string;
  agent_id: string | null;
  /** Seconds since it was written, on the database's clock. */
  age_seconds: number;
  /** Whether the conversation was resolved at or after it (conversation_resolved). */
  resolved_after: boolean;
}

/**
 * The reads and records of the AI agent's timers (follow-ups, sentiment, inactivity, the release of
 * manual control) and of the daily token budget. The reads join other modules' tables
 * (conversations, agents, messages, events) read-only, for one round trip each.
 */
export const aiTimersRepository = {
  /** The conversations (of `ids`) that have an agent, with its settings. */
  async candidates(db: Db, businessId: string, ids: string[]): Promise<TimerCandidate[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<TimerCandidate>`
      select c.id as conversation_id, c.agent_id, a.follow_up_settings, a.inactivity_run_settings, a.activation_rules
      from conversations c
      join agents a on a.business_id = c.business_id and a.id = c.agent_id
      where c.business_id = ${businessId} and c.id = any(${ids}::uuid[])`.execute(db);
    return rows;
  },

  async state(db: Db, businessId: string, conversationId: string): Promise<TimerState | undefined> {
    const { rows } = await sql<TimerState>`
      select c.closed_at, c.manual_control, c.manual_control_locked, c.agent_id,
        extract(epoch from now() - coalesce(c.last_message_at, c.created_at))::float8 as quiet_seconds,
        a.follow_up_settings, a.inactivity_run_settings, a.activation_rules
      from conversations c
      left join agents a on a.business_id = c.business_id and a.id = c.agent_id
      where c.business_id = ${businessId} and c.id = ${conversationId}`.execute(db);
    return rows[0];
  },

  /**
   * The conversation's newest message: of the few latest by time, the one stored last
   * (inStorageOrder), as the run's history orders them.
   */
  async newestMessage(db: Db, businessId: string, conversationId: string): Promise<TimerMessage | undefined> {
    const { rows } = await sql<TimerMessage>`
      select m.id, m.direction, m.sender_type, m.agent_id,
        extract(epoch from now() - m.created_at)::float8 as age_seconds,
        exists (select 1 from events e
          where e.business_id = m.business_id and e.conversation_id = m.conversation_id
            and e.type = 'conversation_resolved' and e.created_at >= m.created_at) as resolved_after
      from messages m
      where m.business_id = ${businessId} and m.conversation_id = ${conversationId}
      order by m.created_at desc, m.id desc
      limit 5`.execute(db);
    return inStorageOrder(rows).at(-1);
  },

  /** The conversation's newest inbound message: the silence a follow-up belongs to comes after it. */
  async newestInboundId(db: Db, businessId: string, conversationId: string): Promise<string | null> {
    const row = await db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('direction', '=', 'inbound')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.id ?? null;
  },

  /**
   * Follow-ups sent in the silence after the inbound message `after` (null: the conversation has
   * none), counted up to `limit` among the conversation's latest follow-up runs.
   */
  async followUpsSent(
    db: Db,
    businessId: string,
    conversationId: string,
    after: string | null,
    limit: number,
  ): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from (
        select input_message_ids from ai_runs
        where business_id = ${businessId} and conversation_id = ${conversationId}
          and kind = 'follow_up' and status = 'replied'
        order by id desc limit ${limit}) r
      where r.input_message_ids = ${after === null ? [] : [after]}::uuid[]`.execute(db);
    return rows[0]?.n ?? 0;
  },

  /**
   * The run of `kind` for `trigger_message_id` in the conversation: a new one, or the one an earlier
   * try of its job left (its attempts counted again while it runs, as a reply's are).
   */
  async start(
    db: Db,
    row: {
      business_id: string;
      id: string;
      conversation_id: string;
      agent_id: string;
      kind: 'follow_up' | 'sentiment';
      trigger_message_id: string;
      input_message_ids: string[];
    },
  ): Promise<AiRunRow> {
    const { rows } = await sql<AiRunRow>`
      insert into ai_runs (business_id, id, conversation_id, agent_id, kind, trigger_message_id, input_message_ids)
      values (${row.business_id}, ${row.id}, ${row.conversation_id}, ${row.agent_id}, ${row.kind},
        ${row.trigger_message_id}, ${row.input_message_ids}::uuid[])
      on conflict (business_id, conversation_id, kind, trigger_message_id) do update
        set attempts = ai_runs.attempts + (case when ai_runs.status = 'running' then 1 else 0 end)
      returning *`.execute(db);
    return rows[0];
  },

  /** Ends as failed the conversation's runs of `kind` still running: their job gave up. */
  async failRunning(
    db: Db,
    businessId: string,
    conversationId: string,
    kind: 'follow_up' | 'sentiment',
    error: string,
  ): Promise<void> {
    await db
      .updateTable('ai_runs')
      .set({ status: 'failed', outcome: 'failed', error, finished_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('kind', '=', kind)
      .where('status', '=', 'running')
      .execute();
  },

  /** Tokens (in and out) of the model calls the business's runs recorded this UTC day. */
  async tokensToday(db: Db, businessId: string): Promise<number> {
    const row = await db
      .selectFrom('ai_token_usage')
      .select('tokens')
      .where('business_id', '=', businessId)
      .where('day', '=', sql<string>`(now() at time zone 'UTC')::date`)
      .executeTakeFirst();
    return Number(row?.tokens ?? 0);
  },
};
