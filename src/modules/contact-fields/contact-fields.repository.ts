import type { Db } from '../../db/database.ts';

const columns = ['id', 'key', 'name'] as const;

export const contactFieldsRepository = {
  insert(db: Db, businessId: string, row: { id: string; key: string; name: string }) {
    return db
      .insertInto('contact_fields')
      .values({ ...row, business_id: businessId })
      .returning(columns)
      .executeTakeFirstOrThrow();
  },

  findByKey(db: Db, businessId: string, key: string) {
    return db
      .selectFrom('contact_fields')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('key', '=', key)
      .executeTakeFirst();
  },

  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('contact_fields')
      .select(columns)
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },
};
