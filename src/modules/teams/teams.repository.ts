import type { Db } from '../../db/database.ts';

export const teamsRepository = {
  insert(db: Db, businessId: string, row: { id: string; name: string }) {
    return db
      .insertInto('teams')
      .values({ ...row, business_id: businessId })
      .returning(['id', 'name'])
      .executeTakeFirstOrThrow();
  },

  /**
   * With `hold`, the row is held (FOR SHARE) until the transaction ends, for a transaction that
   * assigns something to the team: a deletion waits for it and then unassigns what it assigned.
   */
  find(db: Db, businessId: string, id: string, hold = false) {
    const query = db
      .selectFrom('teams')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .where('id', '=', id);
    return (hold ? query.forShare() : query).executeTakeFirst();
  },

  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('teams')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  rename(db: Db, businessId: string, id: string, name: string) {
    return db
      .updateTable('teams')
      .set({ name })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning(['id', 'name'])
      .executeTakeFirst();
  },

  /** Deletes the team; its memberships go with it (foreign key). */
  async delete(db: Db, businessId: string, id: string): Promise<boolean> {
    const result = await db
      .deleteFrom('teams')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  },

  /** The teams' members (user ids, oldest membership first), for the teams of one page. */
  members(db: Db, businessId: string, teamIds: string[]) {
    if (teamIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('team_members')
      .select(['team_id', 'user_id'])
      .where('business_id', '=', businessId)
      .where('team_id', 'in', teamIds)
      .orderBy('created_at')
      .orderBy('user_id')
      .execute();
  },

  /** Makes the team's members exactly `userIds`: drops the others, adds the new ones. */
  async setMembers(db: Db, businessId: string, teamId: string, userIds: string[]): Promise<void> {
    let drop = db.deleteFrom('team_members').where('business_id', '=', businessId).where('team_id', '=', teamId);
    if (userIds.length > 0) drop = drop.where('user_id', 'not in', userIds);
    await drop.execute();
    if (userIds.length === 0) return;
    await db
      .insertInto('team_members')
      .values(userIds.map((userId) => ({ business_id: businessId, team_id: teamId, user_id: userId })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  },

  /** A removed user leaves every team. */
  async removeUser(db: Db, businessId: string, userId: string): Promise<void> {
    await db.deleteFrom('team_members').where('business_id', '=', businessId).where('user_id', '=', userId).execute();
  },

  /** Locks the team's row while its members change, so two changes at once apply one after the other. */
  lock(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('teams')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
  },
};
