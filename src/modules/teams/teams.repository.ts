import type { Db } from '../../db/database.ts';

export const teamsRepository = {
  insert(db: Db, businessId: string, row: { id: string; name: string }) {
    return db
      .insertInto('teams')
      .values({ ...row, business_id: businessId })
      .returning(['id', 'name'])
      .executeTakeFirstOrThrow();
  },

  find(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('teams')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('teams')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },
};
