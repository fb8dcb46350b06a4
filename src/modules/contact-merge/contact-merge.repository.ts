import type { Db } from '../../db/database.ts';
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
};
