import { sql, type Selectable } from 'kysely';
import { canMoveStatus, type MessageStatus } from '../../channels/message-status.ts';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { MessagesTable } from '../../db/types.ts';

/** Which message a status change is about: our id, or the provider's id on one channel. */
export type MessageRef = { id: string } | { channelId: string; providerMessageId: string };

/** A message by business and id. */
export interface MessageKey {
  businessId: string;
  id: string;
}

const outboundColumns = [
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

/** An outbound message as the send job and the status endpoint read it. */
export type OutboundMessage = Pick<Selectable<MessagesTable>, (typeof outboundColumns)[number]>;

/** An outbound message as the send job sends it: with the provider's id of the message it answers, when it has one. */
export type SendableMessage = OutboundMessage & { reply_to_provider_message_id: string | null };

const allStatuses: MessageStatus[] = ['PENDING', 'SENT', 'DELIVERED', 'READ', 'ERROR', 'RECEIVED'];

/** The statuses a message may be in for a move to `to` to be allowed (canMoveStatus, as SQL). */
export const statusesBefore = (to: MessageStatus): MessageStatus[] =>
  allStatuses.filter((from) => canMoveStatus(from, to));

/** Messages by key, as rows `v(business_id, id)` (jsonRows). */
const keys = (refs: MessageKey[]) =>
  jsonRows(
    'v',
    { business_id: 'uuid', id: 'uuid' },
    refs.map((r) => ({ business_id: r.businessId, id: r.id })),
  );

/**
 * A message's delivery state: the moves receipts make, and the send job's marks around its provider
 * call (started, SENT, retried, ERROR), with the reads of outbound messages they go by.
 */
export const messageStatusRepository = {
  /**
   * Moves a message to `to` only when canMoveStatus allows it from its current status, in one
   * statement (so a receipt and the send worker racing cannot move it backwards). Undefined when the
   * message is unknown or the move is not allowed.
   */
  async moveStatus(
    db: Db,
    businessId: string,
    ref: MessageRef,
    to: MessageStatus,
    extra: { statusAt?: string; error?: string | null; providerMessageId?: string } = {},
  ) {
    const from = statusesBefore(to);
    if (from.length === 0) return undefined;
    let query = db
      .updateTable('messages')
      .set({
        status: to,
        status_at: extra.statusAt ?? sql<string>`now()`,
        ...(extra.error !== undefined ? { error: extra.error } : {}),
        ...(extra.providerMessageId !== undefined ? { provider_message_id: extra.providerMessageId } : {}),
      })
      .where('business_id', '=', businessId)
      // `= any` of one array: one statement text whatever the number of statuses, so it stays prepared.
      .where(sql<boolean>`status = any(${from}::text[])`);
    query =
      'id' in ref
        ? query.where('id', '=', ref.id)
        : query.where('channel_id', '=', ref.channelId).where('provider_message_id', '=', ref.providerMessageId);
    return query.returning(['id', 'conversation_id', 'contact_id', 'status', 'status_at']).executeTakeFirst();
  },

  /**
   * A watermark receipt (StatusUpdate.upTo): every outbound message of the channel to the contact
   * holding `identity`, created at or before `until` (within the week before it: older ones had
   * their receipts long ago), moves to `to` where canMoveStatus allows. Found through the contact's
   * messages (its index), not the channel's. The messages moved, in their order.
   */
  moveUpTo(
    db: Db,
    businessId: string,
    ref: { channelId: string; identity: { kind: string; value: string } },
    to: MessageStatus,
    until: string,
  ) {
    const from = statusesBefore(to);
    return db
      .updateTable('messages')
      .set({ status: to, status_at: until })
      .where('business_id', '=', businessId)
      .where(
        'contact_id',
        'in',
        db
          .selectFrom('contact_identities')
          .select('contact_id')
          .where('business_id', '=', businessId)
          .where('kind', '=', ref.identity.kind)
          .where('value', '=', ref.identity.value),
      )
      .where('channel_id', '=', ref.channelId)
      .where('direction', '=', 'outbound')
      .where('created_at', '<=', until)
      .where(sql<boolean>`created_at > ${until}::timestamptz - interval '7 days'`)
      .where(sql<boolean>`status = any(${from}::text[])`)
      .returning(['id', 'status'])
      .execute();
  },

  /**
   * The end of an inbound message that was still arriving (a call: PENDING while it rings and
   * lasts): RECEIVED, or ERROR with the provider's detail. Only from PENDING, so an end told twice
   * or out of order moves it once. Undefined when not moved.
   */
  endArrival(
    db: Db,
    businessId: string,
    id: string,
    to: 'RECEIVED' | 'ERROR',
    extra: { statusAt: string; error: string | null },
  ) {
    return db
      .updateTable('messages')
      .set({ status: to, status_at: extra.statusAt, error: extra.error })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('direction', '=', 'inbound')
      .where('status', '=', 'PENDING')
      .returning(['id', 'status'])
      .executeTakeFirst();
  },

  /**
   * A receipt for a send whose provider id was never recorded, found by the id the provider echoed
   * (StatusUpdate.reference): records the provider id and the receipt's status. Only an outbound
   * message of the channel that went to the provider (an attempt started) and has no provider id,
   * still PENDING (the receipt came before the send's answer was stored) or in ERROR (the answer
   * never came: "outcome unknown"); a receipt proves the provider had the message, so here ERROR
   * gives way to what the receipt says. Never when another message of the channel holds the
   * provider id (a receipt whose reference and id disagree changes nothing).
   */
  recordByReference(
    db: Db,
    businessId: string,
    ref: { channelId: string; id: string },
    providerMessageId: string,
    to: MessageStatus,
    extra: { statusAt: string; error: string | null },
  ) {
    return db
      .updateTable('messages')
      .set({
        status: to,
        provider_message_id: providerMessageId,
        status_at: extra.statusAt,
        error: extra.error,
        provider_call_at: null,
      })
      .where('business_id', '=', businessId)
      .where('id', '=', ref.id)
      .where('channel_id', '=', ref.channelId)
      .where('direction', '=', 'outbound')
      .where('provider_message_id', 'is', null)
      .where('status', 'in', ['PENDING', 'ERROR'])
      .where('send_attempts', '>', 0)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('messages as held')
              .select('held.id')
              .where('held.business_id', '=', businessId)
              .where('held.channel_id', '=', ref.channelId)
              .where('held.provider_message_id', '=', providerMessageId),
          ),
        ),
      )
      .returning(['id', 'status'])
      .executeTakeFirst();
  },

  /**
   * The send an echo without a reference stands for (Instagram and TikTok echo no id of ours) when
   * no message holds the echo's provider id: an outbound message of the channel to that person, of
   * the same type and text, whose call started and whose provider id is not stored yet (the echo
   * came before the send's answer, or the answer never came). The oldest, or undefined.
   */
  async sendAwaitingAnswer(
    db: Db,
    businessId: string,
    echo: { channelId: string; recipient: string; type: string; text: string },
  ): Promise<string | undefined> {
    const row = await db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', businessId)
      .where('channel_id', '=', echo.channelId)
      .where('provider_message_id', 'is', null)
      .where('direction', '=', 'outbound')
      .where('status', 'in', ['PENDING', 'ERROR'])
      .where('send_attempts', '>', 0)
      .where('recipient_address', '=', echo.recipient)
      .where('type', '=', echo.type)
      .where('text', '=', echo.text)
      .orderBy('created_at')
      .limit(1)
      .executeTakeFirst();
    return row?.id;
  },

  /** An outbound message as the send job and the status endpoint need it. */
  outboundMessage(db: Db, businessId: string, id: string): Promise<OutboundMessage | undefined> {
    return db
      .selectFrom('messages')
      .select(outboundColumns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('direction', '=', 'outbound')
      .executeTakeFirst();
  },

  // The statements for several messages below join rows of (business_id, id) to the table on its
  // whole primary key (jsonRows): `business_id = $1 and id = any($2)` would be planned from a guess
  // of the business's share of the table (0.5 % without statistics) and can become a scan of all
  // the business's messages.

  /**
   * Outbound messages by business and id (see outboundMessage), keyed `${business_id}:${id}`, each with
   * the provider's id of the message it answers (reply_to_id) when that one has one on the same
   * channel: the id a provider quotes by.
   */
  async outboundMessages(db: Db, refs: MessageKey[]): Promise<Map<string, SendableMessage>> {
    if (refs.length === 0) return new Map();
    const { rows } = await sql<SendableMessage>`
      select ${sql.join(outboundColumns.map((c) => sql.ref(`m.${c}`)))},
        q.provider_message_id as reply_to_provider_message_id
      from ${keys(refs)}
      join messages m on m.business_id = v.business_id and m.id = v.id
      left join messages q on q.business_id = m.business_id and q.id = m.reply_to_id and q.channel_id = m.channel_id
      where m.direction = 'outbound'`.execute(db);
    return new Map(rows.map((row) => [`${row.business_id}:${row.id}`, row]));
  },

  /**
   * The latest inbound message of a conversation on a channel that a provider named (its provider
   * id and metadata: subject, references), which a reply on a channel threading by headers answers.
   */
  async latestInbound(
    db: Db,
    businessId: string,
    conversationId: string,
    channelId: string,
  ): Promise<{ provider_message_id: string; metadata: Record<string, unknown> } | undefined> {
    const row = await db
      .selectFrom('messages')
      .select(['provider_message_id', 'metadata'])
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('channel_id', '=', channelId)
      .where('direction', '=', 'inbound')
      .where('provider_message_id', 'is not', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.provider_message_id
      ? { provider_message_id: row.provider_message_id, metadata: row.metadata }
      : undefined;
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
   * Moves several messages still waiting to SENT with their provider ids, in one statement; a
   * receipt that already moved a message further is kept. Answers the messages it moved.
   */
  async markSent(db: Db, sent: (MessageKey & { providerMessageId: string })[]): Promise<MessageKey[]> {
    if (sent.length === 0) return [];
    const messages = jsonRows(
      'v',
      { business_id: 'uuid', id: 'uuid', provider_message_id: 'text' },
      sent.map((s) => ({ business_id: s.businessId, id: s.id, provider_message_id: s.providerMessageId })),
    );
    const { rows } = await sql<{ business_id: string; id: string }>`
      update messages m
      set status = 'SENT', provider_message_id = v.provider_message_id, status_at = now(), provider_call_at = null, error = null
      from ${messages}
      where m.business_id = v.business_id and m.id = v.id and m.status = 'PENDING'
      returning m.business_id, m.id`.execute(db);
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
