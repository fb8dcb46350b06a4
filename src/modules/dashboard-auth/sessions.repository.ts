import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { UserRole } from '../../db/types.ts';

/** Session `s` may act for this user: its sign-in opened them (one spelling for every query). */
const opensUser = (user: BusinessUser) =>
  sql<boolean>`exists (select 1 from dashboard_session_users su
    where su.session_id = s.id and su.business_id = ${user.business_id} and su.user_id = ${user.user_id})`;

/** Session `s` may act for one of these users (at least one): the same rule for a list, in one statement. */
const opensAnyOf = (users: readonly BusinessUser[]) =>
  sql<boolean>`s.id in (select su.session_id
    from ${jsonRows('v', { business_id: 'uuid', user_id: 'uuid' }, users)}
    join dashboard_session_users su on su.business_id = v.business_id and su.user_id = v.user_id)`;

/** A user of one business, as sessions name them. */
export interface BusinessUser {
  business_id: string;
  user_id: string;
}

export interface NewSession {
  id: string;
  token_hash: string;
  business_id: string;
  user_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
}

/** A live session as the request hook reads it. */
export interface LiveSession {
  id: string;
  business_id: string;
  user_id: string;
  role: UserRole;
  csrf_token: string;
  last_seen_at: string;
}

/** Sessions are found by their token's hash, before any business is known (docs/ARCHITECTURE.md#tenancy). */
export const sessionsRepository = {
  async insert(db: Db, session: NewSession, users: BusinessUser[]) {
    await db.insertInto('dashboard_sessions').values(session).execute();
    await db
      .insertInto('dashboard_session_users')
      .values(users.map((u) => ({ session_id: session.id, business_id: u.business_id, user_id: u.user_id })))
      .execute();
  },

  /** The session of a token, unless it expired (absolutely, or idle since `idleSince`) or its user was removed. */
  findLive(db: Db, tokenHash: string, now: string, idleSince: string): Promise<LiveSession | undefined> {
    return db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 's.business_id').onRef('u.id', '=', 's.user_id'),
      )
      .select(['s.id', 's.business_id', 's.user_id', 'u.role', 's.csrf_token', 's.last_seen_at'])
      .where('s.token_hash', '=', tokenHash)
      .where('s.expires_at', '>', now)
      .where('s.last_seen_at', '>', idleSince)
      .where('u.deleted_at', 'is', null)
      .executeTakeFirst();
  },

  /** Whether the session with this id is live (as findLive reads a token's). */
  async isLive(db: Db, id: string, now: string, idleSince: string): Promise<boolean> {
    const row = await db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 's.business_id').onRef('u.id', '=', 's.user_id'),
      )
      .select('s.id')
      .where('s.id', '=', id)
      .where('s.expires_at', '>', now)
      .where('s.last_seen_at', '>', idleSince)
      .where('u.deleted_at', 'is', null)
      .executeTakeFirst();
    return row !== undefined;
  },

  /** Whether some session of the business was used since `since` and has not expired (someone is around). */
  async anyActive(db: Db, businessId: string, since: string, now: string): Promise<boolean> {
    const row = await db
      .selectFrom('dashboard_sessions')
      .select('id')
      .where('business_id', '=', businessId)
      .where('last_seen_at', '>', since)
      .where('expires_at', '>', now)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  },

  touch(db: Db, id: string, at: string) {
    return db.updateTable('dashboard_sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
  },

  /**
   * What a session shows: each business it may act for, with its user there (removed users left
   * out), and its CSRF token. Joins the users and businesses it names, for one round trip.
   */
  view(db: Db, sessionId: string) {
    return db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('dashboard_session_users as su', 'su.session_id', 's.id')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 'su.business_id').onRef('u.id', '=', 'su.user_id'),
      )
      .innerJoin('businesses as b', 'b.id', 'su.business_id')
      .select([
        's.csrf_token',
        's.business_id as current_business_id',
        'b.id as business_id',
        'b.name as business_name',
        'u.id as user_id',
        'u.email',
        'u.name',
        'u.role',
      ])
      .where('s.id', '=', sessionId)
      .where('u.deleted_at', 'is', null)
      .orderBy('b.name')
      .orderBy('b.id')
      .execute();
  },

  /** Makes the session act for `businessId`, if its sign-in opened it and that user is still there. */
  switchTo(db: Db, sessionId: string, businessId: string) {
    return db
      .updateTable('dashboard_sessions as s')
      .from('dashboard_session_users as su')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 'su.business_id').onRef('u.id', '=', 'su.user_id'),
      )
      .set((eb) => ({ business_id: eb.ref('su.business_id'), user_id: eb.ref('su.user_id') }))
      .whereRef('su.session_id', '=', 's.id')
      .where('s.id', '=', sessionId)
      .where('su.business_id', '=', businessId)
      .where('u.deleted_at', 'is', null)
      .returning(['s.business_id', 's.user_id'])
      .executeTakeFirst();
  },

  deleteByToken(db: Db, tokenHash: string) {
    return db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
  },

  delete(db: Db, id: string) {
    return db.deleteFrom('dashboard_sessions').where('id', '=', id).execute();
  },

  /** Of these sessions, those still live (as findLive judges), with the business each acts for now. */
  liveBusinesses(db: Db, ids: readonly string[], now: string, idleSince: string) {
    return db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 's.business_id').onRef('u.id', '=', 's.user_id'),
      )
      .select(['s.id', 's.business_id'])
      .where(sql<boolean>`s.id = any(${[...ids]}::uuid[])`)
      .where('s.expires_at', '>', now)
      .where('s.last_seen_at', '>', idleSince)
      .where('u.deleted_at', 'is', null)
      .execute();
  },

  /** The live sessions that may act for this user, newest first. */
  listForUser(db: Db, user: BusinessUser, now: string, idleSince: string, limit: number) {
    return db
      .selectFrom('dashboard_sessions as s')
      .select(['s.id', 's.created_at', 's.last_seen_at', 's.expires_at', 's.ip', 's.user_agent'])
      .where(opensUser(user))
      .where('s.expires_at', '>', now)
      .where('s.last_seen_at', '>', idleSince)
      .orderBy('s.created_at', 'desc')
      .orderBy('s.id', 'desc')
      .limit(limit)
      .execute();
  },

  /** Ends one of the sessions that may act for this user; none when the id names no such session. */
  deleteForUser(db: Db, user: BusinessUser, id: string) {
    return db
      .deleteFrom('dashboard_sessions as s')
      .where('s.id', '=', id)
      .where(opensUser(user))
      .returning('s.id')
      .executeTakeFirst();
  },

  /**
   * Ends every session that may act for one of `users` (but `except`): those that act for them now
   * and those whose sign-in opened them.
   */
  async deleteForUsers(db: Db, users: BusinessUser[], except?: string) {
    if (users.length === 0) return;
    let query = db.deleteFrom('dashboard_sessions as s').where(opensAnyOf(users));
    if (except !== undefined) query = query.where('s.id', '<>', except);
    await query.execute();
  },

  /** The users a session's sign-in opened, still there. */
  users(db: Db, sessionId: string): Promise<BusinessUser[]> {
    return db
      .selectFrom('dashboard_session_users as su')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 'su.business_id').onRef('u.id', '=', 'su.user_id'),
      )
      .select(['su.business_id', 'su.user_id'])
      .where('su.session_id', '=', sessionId)
      .where('u.deleted_at', 'is', null)
      .execute();
  },

  /** Sessions past their absolute end or idle since before `idleSince`. */
  async deleteExpired(db: Db, now: string, idleSince: string): Promise<number> {
    const result = await db
      .deleteFrom('dashboard_sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince)]))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};
