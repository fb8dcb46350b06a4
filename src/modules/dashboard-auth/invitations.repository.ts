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
