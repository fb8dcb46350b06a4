import { sql, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { IdempotencyKeysTable } from '../../db/types.ts';

export type IdempotencyRow = Selectable<IdempotencyKeysTable>;

/** How long a key is remembered (DESIGN.md: 24 hours). */
export const KEY_LIFETIME = sql`interval '24 hours'`;

export const idempotencyRepository = {
  /**
   * Takes the key for a request. ON CONFLICT DO NOTHING makes the database decide between two
   * concurrent first requests: exactly one gets the row back and runs.
   */
  async claim(db: Db, businessId: string, route: string, key: string, requestHash: string): Promise<boolean> {
    const row = await db
      .insertInto('idempotency_keys')
      .values({ business_id: businessId, route, key, request_hash: requestHash })
      .onConflict((oc) => oc.columns(['business_id', 'route', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    return row !== undefined;
  },

  /** The live (unexpired) record of a key. */
  find(db: Db, businessId: string, route: string, key: string): Promise<IdempotencyRow | undefined> {
    return db.selectFrom('idempotency_keys').selectAll()
      .where('business_id', '=', businessId).where('route', '=', route).where('key', '=', key)
      .where('created_at', '>', sql<string>`now() - ${KEY_LIFETIME}`)
      .executeTakeFirst();
  },

  /** Removes this key's record if it has expired, so the key can be claimed afresh. */
  async deleteIfExpired(db: Db, businessId: string, route: string, key: string): Promise<void> {
    await db.deleteFrom('idempotency_keys')
      .where('business_id', '=', businessId).where('route', '=', route).where('key', '=', key)
      .where('created_at', '<=', sql<string>`now() - ${KEY_LIFETIME}`)
      .execute();
  },

  async complete(db: Db, businessId: string, route: string, key: string, statusCode: number, response: unknown): Promise<void> {
    await db.updateTable('idempotency_keys')
      .set({ status_code: statusCode, response: JSON.stringify(response) })
      .where('business_id', '=', businessId).where('route', '=', route).where('key', '=', key)
      .where('status_code', 'is', null)
      .execute();
  },

  /** Forgets a running claim (the request failed with a 5xx or never answered), so a retry runs. */
  async release(db: Db, businessId: string, route: string, key: string): Promise<void> {
    await db.deleteFrom('idempotency_keys')
      .where('business_id', '=', businessId).where('route', '=', route).where('key', '=', key)
      .where('status_code', 'is', null)
      .execute();
  },

  /** Deletes expired records of every business (periodic cleanup); returns how many went. */
  async deleteExpired(db: Db, limit: number): Promise<number> {
    const result = await db.deleteFrom('idempotency_keys')
      .where(({ eb, refTuple, selectFrom }) =>
        eb(refTuple('business_id', 'route', 'key'), 'in',
          selectFrom('idempotency_keys').select(['business_id', 'route', 'key'])
            .where('created_at', '<=', sql<string>`now() - ${KEY_LIFETIME}`).limit(limit) as never))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};
