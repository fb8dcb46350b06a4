import { sql } from 'kysely';
import { advisoryLocks } from '../../db/advisory-locks.ts';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import { channelAccountsRepository } from '../channels/channels.repository.ts';
import { identityKey, type AddressIdentity } from '../contacts/contact-identity.ts';
import {
  byIdentity,
  contactIdentitiesRepository,
  type IdentifiedContact,
} from '../contacts/contact-identities.repository.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';

// Set-based statements for a batch of inbound messages: one statement per step for the whole batch
// instead of one per message; rows travel as one JSON value (jsonRows). They only read and lock: what
// a batch writes goes through the owners' repositories.

export const inboundRepository = {
  /**
   * Takes the senders' identity locks (lockMany's, in the order given: callers sort)
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
   * The contacts the senders' addresses name (contactIdentitiesRepository.find), and in the same
   * statement the lock openConversations takes (conversationLockName) for each contact found and the
   * channel given with its identity, all in one sorted order (as lockMany's callers sort). A contact
   * the caller creates afterwards needs no such lock: no other transaction can see it until the
   * commit. Keyed by identityKey.
   */
  async sendersByIdentity(
    db: Db,
    businessId: string,
    wanted: { identity: AddressIdentity; channelId: string }[],
  ): Promise<Map<string, ContactRow>> {
    if (wanted.length === 0) return new Map();
    const identities = [...new Map(wanted.map((w) => [identityKey(w.identity), w.identity])).values()];
    const { rows } = await sql<IdentifiedContact>`
      with found as materialized (${contactIdentitiesRepository.query(businessId, identities)}),
      locked as (
        select count(pg_advisory_xact_lock(hashtextextended(l.name, 0))) as n
        from (
          select distinct (${businessId}::text || ':conversation:' || f.id || ':' || w.channel_id) collate "C" as name
          from found f join ${jsonRows(
            'w',
            { kind: 'text', value: 'text', channel_id: 'text' },
            wanted.map((w) => ({ kind: w.identity.kind, value: w.identity.value, channel_id: w.channelId })),
          )} on w.kind = f.identity_kind and w.value = f.identity_value
          order by name) l)
      select found.* from found, locked`.execute(db);
    return byIdentity(rows);
  },

  /**
   * The channels holding these provider accounts now, as `${business_id}:${id}` by account, locked
   * (FOR SHARE) until the transaction ends, so none is deleted or moved while its messages are stored.
   * Across businesses: a notification names only the account, which channel_accounts resolves. Each
   * channel is locked by its own key, in account order, so the lock reads one shard once the tables
   * are distributed (docs/SCALING.md).
   */
  async lockChannels(db: Db, kind: string, accounts: string[]): Promise<Map<string, string>> {
    const locked = new Map<string, string>();
    for (const holder of await channelAccountsRepository.ofAccounts(db, kind, accounts)) {
      const row = await db
        .selectFrom('channels')
        .select(['business_id', 'id'])
        .where('business_id', '=', holder.business_id)
        .where('id', '=', holder.channel_id)
        .forShare()
        .executeTakeFirst();
      if (row) locked.set(holder.provider_account, `${row.business_id}:${row.id}`);
    }
    return locked;
  },
};
