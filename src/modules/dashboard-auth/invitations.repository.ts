import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

export const invitationsRepository = {
  insert(
    db: Db,
    row: {
      business_id: string;
      id: string;
      user_id: string;
      token_hash: string;
      created_at: string;
      expires_at: string;
    },
  ) {
    return db.insertInto('dashboard_invitations').values(row).execute();
  },

  /** Marks the invitation of this token accepted, if it is open and unexpired: a token is used once. */
  claim(db: Db, tokenHash: string, now: string) {
    return db
      .updateTable('dashboard_invitations')
      .set({ accepted_at: now })
      .where('token_hash', '=', tokenHash)
      .where('accepted_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['business_id', 'user_id'])
      .executeTakeFirst();
  },

  findByToken(db: Db, tokenHash: string) {
    return db
      .selectFrom('dashboard_invitations')
      .select(['accepted_at', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
  },

  find(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('dashboard_invitations')
      .select(['id', 'user_id'])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /**
   * Locks the user's invitations not accepted yet: an acceptance claims one of them first, so it
   * either committed before (and the user has a password) or waits until the caller commits.
   */
  lockUnaccepted(db: Db, businessId: string, userId: string) {
    return db
      .selectFrom('dashboard_invitations')
      .select('id')
      .where('business_id', '=', businessId)
      .where('user_id', '=', userId)
      .where('accepted_at', 'is', null)
      .forUpdate()
      .execute();
  },

  /**
   * The latest invitation of each user of the business who has not joined yet (no password, not
   * removed), and whether it still works at `now`.
   */
  pending(db: Db, businessId: string, now: string, limit: number) {
    return db
      .selectFrom('dashboard_invitations as i')
      .innerJoin('users as u', (join) =>
        join.onRef('u.business_id', '=', 'i.business_id').onRef('u.id', '=', 'i.user_id'),
      )
      .distinctOn('i.user_id')
      .select([
        'i.id',
        'i.user_id',
        'i.created_at',
        'i.expires_at',
        sql<boolean>`i.accepted_at is null and i.expires_at > ${now}`.as('open'),
      ])
      .where('i.business_id', '=', businessId)
      .where('u.deleted_at', 'is', null)
      .where('u.password_hash', 'is', null)
      .orderBy('i.user_id')
      .orderBy('i.created_at', 'desc')
      .orderBy('i.id', 'desc')
      .limit(limit)
      .execute();
  },

  /** Ends the user's open invitations: a newer one replaces them, or the user was removed. */
  closeForUser(db: Db, businessId: string, userId: string, now: string) {
    return db
      .updateTable('dashboard_invitations')
      .set({ expires_at: now })
      .where('business_id', '=', businessId)
      .where('user_id', '=', userId)
      .where('accepted_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
  },
};
