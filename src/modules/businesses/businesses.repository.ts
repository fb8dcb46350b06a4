import type { Db } from '../../db/database.ts';

/** A LIKE pattern matching `text` literally (a backslash is PostgreSQL's default escape character). */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

export const businessesRepository = {
  insert(db: Db, row: { id: string; name: string }) {
    return db.insertInto('businesses').values(row).returning(['id', 'name', 'created_at']).executeTakeFirstOrThrow();
  },

  find(db: Db, id: string) {
    return db.selectFrom('businesses').select(['id', 'name', 'created_at']).where('id', '=', id).executeTakeFirst();
  },

  /** Oldest first (ids are time-ordered), after the business `after`, with `name` in their name (any case). */
  list(db: Db, page: { limit: number; after?: string; name?: string }) {
    let query = db.selectFrom('businesses').select(['id', 'name', 'created_at']);
    if (page.after !== undefined) query = query.where('id', '>', page.after);
    if (page.name !== undefined) query = query.where('name', 'ilike', `%${escapeLike(page.name)}%`);
    return query.orderBy('id').limit(page.limit).execute();
  },

  async isEmpty(db: Db): Promise<boolean> {
    const row = await db.selectFrom('businesses').select('id').limit(1).executeTakeFirst();
    return row === undefined;
  },
};
