import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import { advisoryLocks } from '../messaging/messaging.repository.ts';

// Set-based statements for a batch of inbound messages: one statement per step for the whole batch
// instead of one per message; rows travel as one JSON value (jsonRows).

export const inboundRepository = {
  /**
   * Takes the senders' identity locks (messagingRepository.lock's, in the order given: callers sort)
   * and, in the same round trip, answers which of the messages (at least one) are stored already,
   * as `${channelId}:${providerMessageId}`. The probe reads the snapshot from before any lock wait,
   * so a redelivery stored by the transaction waited for is not among them; the message insert's
   * ON CONFLICT still skips it, and everything else that transaction did (contact, conversation) is
   * found by the statements that follow. One probe of the unique index per message (LATERAL) over
   * the messages' rows (jsonRows).
   */
  async lockSenders(
    db: Db,
    businessId: string,
    names: string[],
    messages: { channelId: string; providerMessageId: string }[],
  ): Promise<Set<string>> {
    const known = sql`array(select p.channel_id::text || ':' || p.id
      from ${jsonRows(
        'p',
        { channel_id: 'uuid', id: 'text' },
        messages.map((m) => ({ channel_id: m.channelId, id: m.providerMessageId })),
      )}
      cross join lateral (
        select 1 from messages m
        where m.business_id = ${businessId} and m.channel_id = p.channel_id and m.provider_message_id = p.id
        limit 1) m)`;
    const locks = advisoryLocks(names.map((key) => ({ businessId, key })));
    const { rows } = await sql<{ known: string[] }>`select ${locks} as locked, ${known} as known`.execute(db);
    return new Set(rows[0].known);
  },

  /**
   * The channels holding these provider accounts now, as `${business_id}:${id}` by account, locked
   * (FOR SHARE) until the transaction ends, so none is deleted or moved while its messages are stored.
   * Across businesses (index channels_provider_account): a notification names only the account.
   */
  async lockChannels(db: Db, kind: string, accounts: string[]): Promise<Map<string, string>> {
    const rows = await db
      .selectFrom('channels')
      .select(['business_id', 'id', 'provider_account'])
      .where('provider_kind', '=', kind)
      .where('provider_account', 'in', accounts)
      .orderBy('provider_account')
      .forShare()
      .execute();
    return new Map(rows.map((row) => [row.provider_account!, `${row.business_id}:${row.id}`]));
  },
};
