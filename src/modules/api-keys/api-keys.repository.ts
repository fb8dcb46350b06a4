import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** The notification channel on which revoked key hashes are announced. */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';

export const apiKeysRepository = {
  insert(db: Db, row: { business_id: string; id: string; name: string; prefix: string; key_hash: string }) {
    return db
      .insertInto('api_keys')
      .values(row)
      .returning(['id', 'name', 'prefix', 'created_at', 'revoked_at', 'last_used_at'])
      .executeTakeFirstOrThrow();
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

  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('api_keys')
      .select(['id', 'name', 'prefix', 'created_at', 'revoked_at', 'last_used_at'])
      .where('business_id', '=', businessId)
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
  },

  /** Marks a key used now, unless it was marked less than a minute ago (by another process). */
  async markUsed(db: Db, businessId: string, keyHash: string): Promise<void> {
    await db
      .updateTable('api_keys')
      .set({ last_used_at: sql`now()` })
      .where('business_id', '=', businessId)
      .where('key_hash', '=', keyHash)
      .where('revoked_at', 'is', null)
      .where((eb) =>
        eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<string>`now() - interval '1 minute'`)]),
      )
      .execute();
  },

  /** Revokes the key and tells every server process (NOTIFY is sent when the transaction commits). */
  async revoke(db: Db, businessId: string, id: string): Promise<string | undefined> {
    return db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('api_keys')
        .set({ revoked_at: sql`now()` })
        .where('business_id', '=', businessId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .returning('key_hash')
        .executeTakeFirst();
      if (row) await sql`select pg_notify(${API_KEY_REVOKED_CHANNEL}, ${row.key_hash})`.execute(trx);
      return row?.key_hash;
    });
  },
};
