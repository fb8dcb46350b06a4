import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

export const conversationsRepository = {
  /** Whether the business defines a contact field with this key (unique index contact_fields_key). */
  async fieldDefined(db: Db, businessId: string, key: string): Promise<boolean> {
    const row = await db
      .selectFrom('contact_fields')
      .select('id')
      .where('business_id', '=', businessId)
      .where('key', '=', key)
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * Contacts whose custom field `key` holds one of `values`. Each value is a jsonb containment test,
   * which the GIN index contacts_custom_fields answers; business_id filters what it returns.
   */
  contactsByCustomField(db: Db, businessId: string, key: string, values: unknown[], limit: number) {
    return db
      .selectFrom('contacts')
      .select(['id', 'first_name', 'last_name', 'phone_number'])
      .where('business_id', '=', businessId)
      .where((eb) => eb.or(values.map((value) => eb(sql`custom_fields`, '@>', sql`${JSON.stringify({ [key]: value })}::jsonb`))))
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /** Conversations of a contact, oldest first (index conversations_contact). */
  ofContact(db: Db, businessId: string, contactId: string, limit: number) {
    return db
      .selectFrom('conversations')
      .select(['id', 'channel', 'created_at', 'last_message_at', 'message_count'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },
};
