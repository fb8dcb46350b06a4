import { sql, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ContactsTable } from '../../db/types.ts';

export type ContactRow = Selectable<ContactsTable>;

/** Identifiers a contact can be found by; email is compared lower-cased, phone by its key. */
export interface ContactIdentifiers {
  email?: string;
  phoneKey?: string;
  externalId?: string;
}

export const contactsRepository = {
  find(db: Db, businessId: string, id: string): Promise<ContactRow | undefined> {
    return db.selectFrom('contacts').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
  },

  /**
   * Contacts matching any identifier (OR), their own or kept as an alias after a merge, oldest first.
   * Each branch is an equality on an index that leads with business_id.
   */
  findByIdentifiers(db: Db, businessId: string, ids: ContactIdentifiers, limit: number): Promise<ContactRow[]> {
    return db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where((eb) => {
        const branches = [];
        if (ids.email !== undefined) branches.push(eb(sql<string>`lower(email)`, '=', ids.email.toLowerCase()));
        if (ids.phoneKey !== undefined) branches.push(eb('phone_key', '=', ids.phoneKey));
        if (ids.externalId !== undefined) branches.push(eb('external_id', '=', ids.externalId));
        const aliases = [];
        if (ids.email !== undefined) aliases.push({ kind: 'email' as const, value: ids.email.toLowerCase() });
        if (ids.phoneKey !== undefined) aliases.push({ kind: 'phone' as const, value: ids.phoneKey });
        for (const alias of aliases) {
          branches.push(
            eb('id', 'in', eb
              .selectFrom('contact_aliases')
              .select('contact_id')
              .where('business_id', '=', businessId)
              .where('kind', '=', alias.kind)
              .where('value', '=', alias.value)),
          );
        }
        return eb.or(branches);
      })
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },
};
