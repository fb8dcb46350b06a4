import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

const columns = ['id', 'email', 'name'] as const;

export const usersRepository = {
  insert(db: Db, businessId: string, row: { id: string; email: string; name: string; password_hash: string | null }) {
    return db
      .insertInto('users')
      .values({ ...row, business_id: businessId })
      .returning(columns)
      .executeTakeFirstOrThrow();
  },

  /** Emails are unique per business in any case. */
  findByEmail(db: Db, businessId: string, email: string) {
    return db
      .selectFrom('users')
      .select(columns)
      .where('business_id', '=', businessId)
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .executeTakeFirst();
  },

  find(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('users')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('users')
      .select(columns)
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },
};
