import { CompiledQuery, sql, type Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ContactsTable, MessagesTable } from '../../db/types.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';
import { valuesList } from '../messaging/values-list.ts';

// Set-based statements for a batch of inbound messages: one statement per step for the whole batch
// instead of one per message. Lists travel as one jsonb parameter (the same on PostgreSQL and PGlite).

/** Transaction-scoped advisory locks on `${businessId}:${name}`, taken in the order given (callers sort). */
export async function lockNames(db: Db, businessId: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  const keys = JSON.stringify(names.map((name) => `${businessId}:${name}`));
  await sql`select pg_advisory_xact_lock(hashtextextended(k, 0)) from jsonb_array_elements_text(${keys}::jsonb) as k`.execute(db);
}

export const inboundRepository = {
  /**
   * The provider message ids among `ids` already stored on the channel: one probe of the unique
   * index per id (LATERAL), over a VALUES list so each batch is planned at the table's current size
   * (values-list.ts), never with a plan cached while the table was small.
   */
  async knownProviderIds(db: Db, businessId: string, channelId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const { rows } = await sql<{ id: string }>`select p.id from ${valuesList(ids.map((id) => [id]), ['text'])} as p(id)
      cross join lateral (
        select 1 from messages m
        where m.business_id = ${businessId} and m.channel_id = ${channelId} and m.provider_message_id = p.id
        limit 1) m`.execute(db);
    return new Set(rows.map((r) => r.id));
  },

  insertContacts(db: Db, rows: Insertable<ContactsTable>[]): Promise<ContactRow[]> {
    if (rows.length === 0) return Promise.resolve([]);
    return db
      .insertInto('contacts')
      .values(rows.map((row) => ({ ...row, custom_fields: JSON.stringify(row.custom_fields ?? {}) })))
      .returningAll()
      .execute();
  },

  /**
   * Inserts the messages, skipping provider ids stored meanwhile, and adds those inserted to their
   * conversations' message_count and last_message_at, in one statement (a data-modifying CTE);
   * returns the messages inserted.
   */
  async insertMessages(db: Db, businessId: string, rows: Insertable<MessagesTable>[]) {
    if (rows.length === 0) return [];
    const insert = db
      .insertInto('messages')
      .values(rows.map((row) => ({ ...row, metadata: JSON.stringify(row.metadata ?? {}) })))
      .onConflict((oc) => oc.columns(['business_id', 'channel_id', 'provider_message_id']).doNothing())
      .returning(['id', 'conversation_id', 'provider_message_id', 'created_at'])
      .compile();
    const business = `$${insert.parameters.length + 1}`;
    const text = `with inserted as (${insert.sql}),
      counted as (
        update conversations c
        set message_count = c.message_count + v.n, last_message_at = greatest(c.last_message_at, v.last)
        from (select conversation_id as id, count(*)::integer as n, max(created_at) as last from inserted group by conversation_id) v
        where c.business_id = ${business} and c.id = v.id)
      select * from inserted`;
    const result = await db.executeQuery<{ id: string; conversation_id: string; provider_message_id: string | null; created_at: string }>(
      CompiledQuery.raw(text, [...insert.parameters, businessId]),
    );
    return result.rows;
  },
};
