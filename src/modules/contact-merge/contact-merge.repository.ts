import { sql, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ContactsTable } from '../../db/types.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';

export const contactMergeRepository = {
  /** Both contacts, locked for the merge; locked in id order so two crossing merges cannot deadlock. */
  lockPair(trx: Db, businessId: string, ids: [string, string]): Promise<ContactRow[]> {
    return trx
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', 'in', ids)
      .orderBy('id')
      .forUpdate()
      .execute();
  },

  async updateContact(trx: Db, businessId: string, id: string, patch: Updateable<ContactsTable>): Promise<void> {
    const values = { ...patch };
    // Serialised here: a driver would send a top-level JSON array as a Postgres array.
    if (patch.custom_fields !== undefined) values.custom_fields = JSON.stringify(patch.custom_fields);
    if (patch.collected_data !== undefined) values.collected_data = JSON.stringify(patch.collected_data);
    await trx
      .updateTable('contacts')
      .set({ ...values, updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .execute();
  },

  async userEmail(trx: Db, businessId: string, userId: string): Promise<string | null> {
    const row = await trx
      .selectFrom('users')
      .select('email')
      .where('business_id', '=', businessId)
      .where('id', '=', userId)
      .executeTakeFirst();
    return row?.email ?? null;
  },

  /** Conversations, messages and events of one contact become another's. */
  async moveHistory(trx: Db, businessId: string, fromId: string, toId: string): Promise<void> {
    for (const table of ['conversations', 'messages', 'events'] as const) {
      await trx
        .updateTable(table)
        .set({ contact_id: toId })
        .where('business_id', '=', businessId)
        .where('contact_id', '=', fromId)
        .execute();
    }
  },

  /** Contact tags are mirrored on the contact's conversations. */
  async syncConversationTags(trx: Db, businessId: string, contactId: string, tags: string[]): Promise<void> {
    await trx
      .updateTable('conversations')
      .set({ tags })
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .execute();
  },

  /** Copies the aliases of one contact to another; the originals go with their contact. */
  async copyAliases(trx: Db, businessId: string, fromId: string, toId: string): Promise<void> {
    await trx
      .insertInto('contact_aliases')
      .columns(['business_id', 'kind', 'value', 'contact_id'])
      .expression((eb) =>
        eb
          .selectFrom('contact_aliases')
          .select(['business_id', 'kind', 'value', eb.val(toId).as('contact_id')])
          .where('business_id', '=', businessId)
          .where('contact_id', '=', fromId),
      )
      .onConflict((oc) => oc.doNothing())
      .execute();
  },

  async addAliases(
    trx: Db,
    businessId: string,
    contactId: string,
    aliases: { kind: 'email' | 'phone'; value: string }[],
  ): Promise<void> {
    if (aliases.length === 0) return;
    await trx
      .insertInto('contact_aliases')
      .values(aliases.map((a) => ({ business_id: businessId, contact_id: contactId, kind: a.kind, value: a.value })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  },

  async deleteContact(trx: Db, businessId: string, id: string): Promise<void> {
    await trx.deleteFrom('contacts').where('business_id', '=', businessId).where('id', '=', id).execute();
  },
};
