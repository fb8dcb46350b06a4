import { sql, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable, MessagesTable } from '../../db/types.ts';
import { jsonRows } from '../../db/json-rows.ts';

export type ConversationRow = Selectable<ConversationsTable>;

/** A message by business and id. */
export interface MessageKey {
  businessId: string;
  id: string;
}

const messageColumns = [
  'id',
  'business_id',
  'conversation_id',
  'contact_id',
  'channel',
  'channel_id',
  'direction',
  'type',
  'status',
  'error',
  'recipient_address',
  'provider_message_id',
  'outbound_content',
  'provider_call_at',
  'send_attempts',
  'template_id',
] as const;

/** An outbound message as the worker and the status endpoint read it. */
export type OutboundMessage = Pick<Selectable<MessagesTable>, (typeof messageColumns)[number]>;

/** Messages (or outbox jobs) by key, as rows `v(business_id, id)` (jsonRows). */
const keys = (refs: MessageKey[]) =>
  jsonRows(
    'v',
    { business_id: 'uuid', id: 'uuid' },
    refs.map((r) => ({ business_id: r.businessId, id: r.id })),
  );

/** All SQL of sending: recipients' conversations, outbound messages and their delivery state. */
export const sendingRepository = {
  team(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('teams')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /**
   * The (contact, channel) pairs whose service window is open: the contact wrote on the channel
   * within the last `hours` of the pair (its channel kind's window; messages recorded without a
   * channel id, imports, count for channels of their type). One statement for all pairs, whatever
   * their windows, keyed `${contact_id}:${channel_id}`.
   */
  async inServiceWindows(
    db: Db,
    businessId: string,
    pairs: { contact_id: string; channel_id: string; channel: string; hours: number }[],
  ): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    const rows = jsonRows('p', { contact_id: 'uuid', channel_id: 'uuid', channel: 'text', hours: 'float8' }, pairs);
    // LATERAL ... LIMIT 1: one probe of messages_contact per pair, never a scan of the business's day.
    const { rows: open } = await sql<{ lookup: string }>`
      select p.contact_id || ':' || p.channel_id as lookup
      from ${rows}
      cross join lateral (
        select 1 from messages m
        where m.business_id = ${businessId} and m.contact_id = p.contact_id
          and m.created_at > now() - p.hours * interval '1 hour' and m.direction = 'inbound'
          and (m.channel_id = p.channel_id or (m.channel_id is null and m.channel = p.channel))
        limit 1) w`.execute(db);
    return new Set(open.map((r) => r.lookup));
  },

  conversation(db: Db, businessId: string, id: string): Promise<ConversationRow> {
    return db
      .selectFrom('conversations')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  },

  updateConversation(
    db: Db,
    businessId: string,
    id: string,
    changes: Updateable<ConversationsTable>,
  ): Promise<ConversationRow> {
    return db
      .updateTable('conversations')
      .set(changes)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  /** An outbound message as the worker and the status endpoint need it. */
  outboundMessage(db: Db, businessId: string, id: string): Promise<OutboundMessage | undefined> {
    return db
      .selectFrom('messages')
      .select(messageColumns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('direction', '=', 'outbound')
      .executeTakeFirst();
  },

  // The statements for several messages below join rows of (business_id, id) to the table on its
  // whole primary key (jsonRows): `business_id = $1 and id = any($2)` would be planned from a guess
  // of the business's share of the table (0.5 % without statistics) and can become a scan of all
  // the business's messages.

  /** Outbound messages by business and id (see outboundMessage), keyed `${business_id}:${id}`. */
  async outboundMessages(db: Db, refs: MessageKey[]): Promise<Map<string, OutboundMessage>> {
    if (refs.length === 0) return new Map();
    const { rows } = await sql<OutboundMessage>`
      select ${sql.join(messageColumns.map((c) => sql.ref(`m.${c}`)))}
      from ${keys(refs)}
      join messages m on m.business_id = v.business_id and m.id = v.id
      where m.direction = 'outbound'`.execute(db);
    return new Map(rows.map((row) => [`${row.business_id}:${row.id}`, row]));
  },

  /**
   * Records (and commits) that the requests of these messages' provider calls are about to be
   * written, counting an attempt each, in one statement. Answers the keys (`${business_id}:${id}`)
   * of the messages that were still waiting to be sent (not finished by another worker, nor given
   * up, nor in another worker's call).
   */
  async startCalls(db: Db, refs: MessageKey[]): Promise<Set<string>> {
    if (refs.length === 0) return new Set();
    const { rows } = await sql<{ business_id: string; id: string }>`
      update messages m
      set provider_call_at = now(), send_attempts = m.send_attempts + 1
      from ${keys(refs)}
      where m.business_id = v.business_id and m.id = v.id and m.status = 'PENDING' and m.provider_call_at is null
      returning m.business_id, m.id`.execute(db);
    return new Set(rows.map((r) => `${r.business_id}:${r.id}`));
  },

  /**
   * markSent for several messages, each with the completion of its outbox job, in one statement (so
   * one commit records both: a job is done exactly when its message's outcome is stored). A
   * receipt that already moved a message further is kept. Answers the messages it moved to SENT.
   */
  async markSentMany(
    db: Db,
    sent: (MessageKey & { providerMessageId: string; jobId: string })[],
  ): Promise<MessageKey[]> {
    if (sent.length === 0) return [];
    const messages = jsonRows(
      'v',
      { business_id: 'uuid', id: 'uuid', provider_message_id: 'text' },
      sent.map((s) => ({ business_id: s.businessId, id: s.id, provider_message_id: s.providerMessageId })),
    );
    const { rows } = await sql<{ business_id: string; id: string }>`
      with sent as (
        update messages m
        set status = 'SENT', provider_message_id = v.provider_message_id, status_at = now(), provider_call_at = null, error = null
        from ${messages}
        where m.business_id = v.business_id and m.id = v.id and m.status = 'PENDING'
        returning m.business_id, m.id),
      done as (
        update outbox o set state = 'done', locked_until = null, locked_by = null, last_error = null
        from ${keys(sent.map((s) => ({ businessId: s.businessId, id: s.jobId })))}
        where o.business_id = v.business_id and o.id = v.id and o.state = 'running')
      select business_id, id from sent`.execute(db);
    return rows.map((r) => ({ businessId: r.business_id, id: r.id }));
  },

  /**
   * The attempt failed but the message may be tried again: it waits for its next attempt, with the
   * attempt's error and the number of attempts so far (`attempts`, which the call's start counted
   * already when the request was written).
   */
  async endCall(db: Db, businessId: string, id: string, error: string, attempts: number): Promise<void> {
    await db
      .updateTable('messages')
      .set({ provider_call_at: null, error, send_attempts: attempts })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  },

  /**
   * The send failed for good (or its outcome cannot be known), after `attempts` attempts when an
   * attempt ended it. Whether the message was still waiting (and so moved to ERROR).
   */
  async markError(db: Db, businessId: string, id: string, error: string, attempts?: number): Promise<boolean> {
    const result = await db
      .updateTable('messages')
      .set({
        status: 'ERROR',
        error,
        status_at: sql<string>`now()`,
        provider_call_at: null,
        ...(attempts === undefined ? {} : { send_attempts: attempts }),
      })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },
};
