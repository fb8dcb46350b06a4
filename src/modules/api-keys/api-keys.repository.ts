import type { Db } from '../../db/database.ts';

export const apiKeysRepository = {
  insert(db: Db, row: { business_id: string; id: string; name: string; prefix: string; key_hash: string }) {
    return db.insertInto('api_keys').values(row).returning(['id', 'name', 'prefix', 'created_at']).executeTakeFirstOrThrow();
  },

  /** The business of an active key, by the key's hash. */
  async businessOfHash(db: Db, keyHash: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('api_keys')
      .select('business_id')
      .where('key_hash', '=', keyHash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return row?.business_id;
  },

  list(db: Db, businessId: string) {
    return db
      .selectFrom('api_keys')
      .select(['id', 'name', 'prefix', 'created_at', 'revoked_at'])
      .where('business_id', '=', businessId)
      .orderBy('created_at', 'desc')
      .execute();
  },

  async revoke(db: Db, businessId: string, id: string): Promise<boolean> {
    const result = await db
      .updateTable('api_keys')
      .set({ revoked_at: new Date().toISOString() })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },
};
