import type { Db } from '../../db/database.ts';

const columns = ['id', 'name', 'type', 'config', 'created_at'] as const;

export const agentsRepository = {
  insert(db: Db, businessId: string, row: { id: string; name: string; type: string; config: Record<string, unknown> }) {
    return db
      .insertInto('agents')
      .values({ ...row, config: JSON.stringify(row.config), business_id: businessId })
      .returning(columns)
      .executeTakeFirstOrThrow();
  },

  find(db: Db, businessId: string, id: string) {
    return db.selectFrom('agents').select(columns).where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
  },
};
