import type { Db } from '../../db/database.ts';

export const businessesRepository = {
  insert(db: Db, row: { id: string; name: string }) {
    return db.insertInto('businesses').values(row).returning(['id', 'name', 'created_at']).executeTakeFirstOrThrow();
  },

  find(db: Db, id: string) {
    return db.selectFrom('businesses').select(['id', 'name', 'created_at']).where('id', '=', id).executeTakeFirst();
  },

  list(db: Db, limit: number) {
    return db.selectFrom('businesses').select(['id', 'name', 'created_at']).orderBy('id').limit(limit).execute();
  },

  async isEmpty(db: Db): Promise<boolean> {
    const row = await db.selectFrom('businesses').select('id').limit(1).executeTakeFirst();
    return row === undefined;
  },
};
