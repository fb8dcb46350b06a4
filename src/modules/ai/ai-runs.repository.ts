import { sql, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { AiRunsTable } from '../../db/types.ts';
import type { ModelCall } from './llm-client.ts';

export type AiRunRow = Selectable<AiRunsTable>;

/** How a run ended (or `running` while it runs). */
export type RunStatus = AiRunRow['status'];

/** A conversation an inbound message landed in, with what decides whether its agent answers. */
export interface AnswerCandidate {
  conversation_id: string;
  channel_id: string | null;
  manual_control: boolean;
  agent_id: string;
  activation_rules: Record<string, unknown>;
  /** The contact's tags. */
  tags: string[];
  /** The provider kind of the conversation's channel (null: none). */
  provider_kind: string | null;
}

/** What a run reads first: the conversation, its agent, and the newest inbound message. */
export interface RunState {
  manual_control: boolean;
  closed_at: string | null;
  contact_id: string;
  channel_id: string | null;
  agent_id: string | null;
  newest_inbound_id: string | null;
}

/** One tool call of a run as its record keeps it (also what a run taken up again replays to the model). */
export interface ToolCallRecord {
  /** The model's id of the call. */
  id: string;
  /** The model call that asked for it: 1, 2, … */
  round: number;
  name: string;
  arguments: unknown;
  result?: unknown;
  error?: string;
  /** A transfer's attempt number in the run (transfer_* events carry it). */
  attempt?: number;
  latency_ms: number;
}

export interface RunMessage {
  id: string;
  direction: 'inbound' | 'outbound';
  sender_type: string;
  type: string;
  text: string;
}

/**
 * Messages read newest first by time, put oldest first in the order the service stored them: an
 * inbound message's time is the provider's, to the second, so a reply stored within that second
 * would otherwise come before the message it answers. Live messages' ids are UUIDv7, in storage
 * order to the millisecond; a window holding others (imported ones) keeps the times' order.
 */
export function inStorageOrder<T extends { id: string }>(newestFirst: T[]): T[] {
  const rows = [...newestFirst].reverse();
  if (rows.every((r) => r.id[14] === '7')) rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return rows;
}

/**
 * The AI agent's runs (`ai_runs`) and the reads a run needs. The reads join other modules' tables
 * (conversations, agents, contacts, messages) read-only, for one round trip each.
 */
export const aiRunsRepository = {
  /** The conversations (of `ids`) that have an agent, with its rules and the contact's tags. */
  async answerCandidates(db: Db, businessId: string, ids: string[]): Promise<AnswerCandidate[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<AnswerCandidate>`
      select c.id as conversation_id, c.channel_id, c.manual_control, c.agent_id, a.activation_rules, k.tags,
        ch.provider_kind
      from conversations c
      join agents a on a.business_id = c.business_id and a.id = c.agent_id
      join contacts k on k.business_id = c.business_id and k.id = c.contact_id
      left join channels ch on ch.business_id = c.business_id and ch.id = c.channel_id
      where c.business_id = ${businessId} and c.id = any(${ids}::uuid[])`.execute(db);
    return rows;
  },

  async runState(db: Db, businessId: string, conversationId: string): Promise<RunState | undefined> {
    const { rows } = await sql<RunState>`
      select c.manual_control, c.closed_at, c.contact_id, c.channel_id, c.agent_id,
        (select m.id from messages m
          where m.business_id = c.business_id and m.conversation_id = c.id and m.direction = 'inbound'
          order by m.created_at desc, m.id desc limit 1) as newest_inbound_id
      from conversations c where c.business_id = ${businessId} and c.id = ${conversationId}`.execute(db);
    return rows[0];
  },

  /** The conversation's `limit` latest messages (index messages_conversation), oldest first as stored. */
  async recentMessages(db: Db, businessId: string, conversationId: string, limit: number): Promise<RunMessage[]> {
    const rows = await db
      .selectFrom('messages')
      .select(['id', 'direction', 'sender_type', 'type', 'text'])
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return inStorageOrder(rows);
  },

  /** Whether an AI agent has written in the conversation before (its first reply carries bot_start). */
  async agentHasReplied(db: Db, businessId: string, conversationId: string): Promise<boolean> {
    const row = await db
      .selectFrom('messages')
      .select(sql<number>`1`.as('one'))
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('sender_type', '=', 'ai_agent')
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * The run answering `trigger_message_id` in the conversation: a new one, or the one a stopped
   * worker left (its attempts counted again while it runs). One row per trigger, so a run taken up
   * again after a crash carries on the same record.
   */
  async start(
    db: Db,
    row: {
      business_id: string;
      id: string;
      conversation_id: string;
      agent_id: string;
      trigger_message_id: string;
      input_message_ids: string[];
    },
  ): Promise<AiRunRow> {
    const { rows } = await sql<AiRunRow>`
      insert into ai_runs (business_id, id, conversation_id, agent_id, trigger_message_id, input_message_ids)
      values (${row.business_id}, ${row.id}, ${row.conversation_id}, ${row.agent_id}, ${row.trigger_message_id},
        ${row.input_message_ids}::uuid[])
      on conflict (business_id, conversation_id, kind, trigger_message_id) do update
        set attempts = ai_runs.attempts + (case when ai_runs.status = 'running' then 1 else 0 end)
      returning *`.execute(db);
    return rows[0];
  },

  /** The conversation's latest reply run still running (one a stopped worker left), if any. */
  running(db: Db, businessId: string, conversationId: string): Promise<AiRunRow | undefined> {
    return db
      .selectFrom('ai_runs')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('kind', '=', 'reply')
      .where('status', '=', 'running')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
  },

  /**
   * Ends as superseded the conversation's reply runs still running for an older message than
   * `triggerMessageId` (one a stopped worker left, or one still waiting for the model, whose reply
   * then goes nowhere): the run of the newest message answers theirs too.
   */
  async supersedeOlder(db: Db, businessId: string, conversationId: string, triggerMessageId: string): Promise<void> {
    await db
      .updateTable('ai_runs')
      .set({ status: 'superseded', outcome: 'superseded', finished_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('kind', '=', 'reply')
      .where('status', '=', 'running')
      .where('trigger_message_id', '!=', triggerMessageId)
      .execute();
  },

  /** Appends the record of one model call, and adds its tokens to the business's day (the budget's count). */
  async addModelCall(db: Db, businessId: string, runId: string, call: ModelCall): Promise<void> {
    const tokens = (call.tokens_in ?? 0) + (call.tokens_out ?? 0);
    await sql`with run as (
        update ai_runs set model_calls = model_calls || ${JSON.stringify([call])}::jsonb
        where business_id = ${businessId} and id = ${runId} returning business_id
      )
      insert into ai_token_usage (business_id, day, tokens)
      select business_id, (now() at time zone 'UTC')::date, ${tokens}::bigint from run where ${tokens}::bigint > 0
      on conflict (business_id, day) do update set tokens = ai_token_usage.tokens + excluded.tokens`.execute(db);
  },

  /**
   * Appends the record of one tool call, in the transaction of the tool's effect: a run taken up
   * again finds the call done and replays its result instead of acting again.
   */
  async addToolCall(db: Db, businessId: string, runId: string, record: ToolCallRecord): Promise<void> {
    await sql`update ai_runs set tool_calls = tool_calls || ${JSON.stringify([record])}::jsonb
      where business_id = ${businessId} and id = ${runId}`.execute(db);
  },

  /** The run's tool calls as recorded now. */
  async toolCalls(db: Db, businessId: string, runId: string): Promise<ToolCallRecord[]> {
    const row = await db
      .selectFrom('ai_runs')
      .select('tool_calls')
      .where('business_id', '=', businessId)
      .where('id', '=', runId)
      .executeTakeFirst();
    return (row?.tool_calls ?? []) as ToolCallRecord[];
  },

  /** The run's status, its row locked until the transaction ends (the one that sends its reply). */
  async lockStatus(db: Db, businessId: string, runId: string): Promise<RunStatus | undefined> {
    const row = await db
      .selectFrom('ai_runs')
      .select('status')
      .where('business_id', '=', businessId)
      .where('id', '=', runId)
      .forUpdate()
      .executeTakeFirst();
    return row?.status;
  },

  /** Ends a running run with its outcome; false when it had ended already. */
  async finish(
    db: Db,
    businessId: string,
    runId: string,
    end: {
      status: Exclude<RunStatus, 'running'>;
      outcome: string;
      reply_text?: string | null;
      reply_message_id?: string | null;
      bot_status?: string | null;
      error?: string | null;
    },
  ): Promise<boolean> {
    const result = await db
      .updateTable('ai_runs')
      .set({
        status: end.status,
        outcome: end.outcome,
        reply_text: end.reply_text ?? null,
        reply_message_id: end.reply_message_id ?? null,
        bot_status: end.bot_status ?? null,
        error: end.error ?? null,
        finished_at: sql<string>`now()`,
      })
      .where('business_id', '=', businessId)
      .where('id', '=', runId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  },

  /** The conversation's runs, newest first, before the run `before` (its id) when given. */
  list(db: Db, businessId: string, conversationId: string, options: { limit: number; before?: string }) {
    let query = db
      .selectFrom('ai_runs')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId);
    if (options.before !== undefined) query = query.where('id', '<', options.before);
    return query.orderBy('id', 'desc').limit(options.limit).execute();
  },
};
