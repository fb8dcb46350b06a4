import type { Db } from '../../db/database.ts';

export const contactMergeRepository = {
  /** The email of the loser's assigned user, for the merge's event (a removed user's too). */
  async userEmail(trx: Db, businessId: string, userId: string): Promise<string | null> {
    const row = await trx
      .selectFrom('users')
      .select('email')
      .where('business_id', '=', businessId)
      .where('id', '=', userId)
      .executeTakeFirst();
    return row?.email ?? null;
  },
};
