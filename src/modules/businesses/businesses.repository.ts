import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** A LIKE pattern matching `text` literally (a backslash is PostgreSQL's default escape character). */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** What the operator API shows of a business. */
const columns = ['id', 'name', 'ai_daily_token_budget', 'time_zone', 'created_at'] as const;

export const businessesRepository = {
  insert(db: Db, row: { id: string; name: string }) {
    return db.insertInto('businesses').values(row).returning(columns).executeTakeFirstOrThrow();
  },

  find(db: Db, id: string) {
    return db.selectFrom('businesses').select(columns).where('id', '=', id).executeTakeFirst();
  },

  /** Changes the business's settings; undefined when it does not exist. */
  update(db: Db, id: string, changes: { name?: string; ai_daily_token_budget?: number | null; time_zone?: string }) {
    return db.updateTable('businesses').set(changes).where('id', '=', id).returning(columns).executeTakeFirst();
  },

  /** The business's own daily token budget of its AI agents (null: the service's default). */
  async aiDailyTokenBudget(db: Db, id: string): Promise<number | null> {
    const row = await db
      .selectFrom('businesses')
      .select('ai_daily_token_budget')
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.ai_daily_token_budget ?? null;
  },

  /** Whether PostgreSQL knows `name` as a zone (what `AT TIME ZONE` accepts by name). */
  async knowsTimeZone(db: Db, name: string): Promise<boolean> {
    const { rows } = await sql<{ known: boolean }>`
      select exists (select 1 from pg_timezone_names where name = ${name}) as known`.execute(db);
    return rows[0]?.known === true;
  },

  /** Oldest first (ids are time-ordered), after the business `after`, with `name` in their name (any case). */
  list(db: Db, page: { limit: number; after?: string; name?: string }) {
    let query = db.selectFrom('businesses').select(columns);
    if (page.after !== undefined) query = query.where('id', '>', page.after);
    if (page.name !== undefined) query = query.where('name', 'ilike', `%${escapeLike(page.name)}%`);
    return query.orderBy('id').limit(page.limit).execute();
  },

  async isEmpty(db: Db): Promise<boolean> {
    const row = await db.selectFrom('businesses').select('id').limit(1).executeTakeFirst();
    return row === undefined;
  },
};
