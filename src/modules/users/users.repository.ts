import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { UserRole } from '../../db/types.ts';

const columns = ['id', 'email', 'name', 'role'] as const;

/** A user row of one business together with its password hash, as sign-in reads it. */
export interface SignInCandidate {
  business_id: string;
  id: string;
  password_hash: string | null;
}

/** Every read and write here leaves removed users (deleted_at) out, unless it says otherwise. */
export const usersRepository = {
  insert(
    db: Db,
    businessId: string,
    row: { id: string; email: string; name: string; password_hash: string | null; role: UserRole },
  ) {
    return db
      .insertInto('users')
      .values({ ...row, business_id: businessId })
      .returning(columns)
      .executeTakeFirstOrThrow();
  },

  /**
   * Emails are unique per business in any case. With `hold`, the row is held (FOR SHARE) until the
   * transaction ends, as `find` holds it.
   */
  findByEmail(db: Db, businessId: string, email: string, hold = false) {
    const query = db
      .selectFrom('users')
      .select(columns)
      .where('business_id', '=', businessId)
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .where('deleted_at', 'is', null);
    return (hold ? query.forShare() : query).executeTakeFirst();
  },

  /**
   * With `hold`, the row is held (FOR SHARE) until the transaction ends, for a transaction that
   * assigns something to the user: a removal (markDeleted) waits for it and then unassigns what it
   * assigned, and one that removed the user first makes this read find none.
   */
  find(db: Db, businessId: string, id: string, hold = false) {
    const query = db
      .selectFrom('users')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null);
    return (hold ? query.forShare() : query).executeTakeFirst();
  },

  findWithPassword(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('users')
      .select([...columns, 'password_hash'])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  },

  /** Which of `ids` are users of the business, not removed. */
  async activeIds(db: Db, businessId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await db
      .selectFrom('users')
      .select('id')
      .where('business_id', '=', businessId)
      .where('id', 'in', ids)
      .where('deleted_at', 'is', null)
      .execute();
    return new Set(rows.map((r) => r.id));
  },

  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('users')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /**
   * The users with this email in every business, the one read across businesses: sign-in tries the
   * password on each. The most recently used first, then the oldest.
   */
  signInCandidates(db: Db, email: string, limit: number): Promise<SignInCandidate[]> {
    return db
      .selectFrom('users')
      .select(['business_id', 'id', 'password_hash'])
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .where('deleted_at', 'is', null)
      .orderBy(sql`last_active_at desc nulls last`)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /** The business's owners, locked: a change that could leave it without one holds them until it commits. */
  lockOwners(db: Db, businessId: string) {
    return db
      .selectFrom('users')
      .select('id')
      .where('business_id', '=', businessId)
      .where('role', '=', 'owner')
      .where('deleted_at', 'is', null)
      .forUpdate()
      .execute();
  },

  update(db: Db, businessId: string, id: string, changes: { name?: string; role?: UserRole }) {
    return db
      .updateTable('users')
      .set(changes)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .returning(columns)
      .executeTakeFirst();
  },

  markDeleted(db: Db, businessId: string, id: string, at: string) {
    return db
      .updateTable('users')
      .set({ deleted_at: at })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .returning(['id', 'email'])
      .executeTakeFirst();
  },

  /** One password hash for several users (one person's rows in several businesses). */
  async setPasswordHash(db: Db, users: { business_id: string; id: string }[], passwordHash: string) {
    for (const user of users) {
      await db
        .updateTable('users')
        .set({ password_hash: passwordHash })
        .where('business_id', '=', user.business_id)
        .where('id', '=', user.id)
        .where('deleted_at', 'is', null)
        .execute();
    }
  },

  /** Replaces a hash made otherwise (sign-in's rehash), unless the password changed meanwhile. */
  replacePasswordHash(db: Db, user: SignInCandidate, passwordHash: string) {
    return db
      .updateTable('users')
      .set({ password_hash: passwordHash })
      .where('business_id', '=', user.business_id)
      .where('id', '=', user.id)
      .where('password_hash', '=', user.password_hash)
      .execute();
  },

  touchActive(db: Db, businessId: string, id: string, at: string) {
    return db
      .updateTable('users')
      .set({ last_active_at: at })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .execute();
  },
};
