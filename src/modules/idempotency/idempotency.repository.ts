import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, IdempotencyKeysTable } from '../../db/types.ts';

export type IdempotencyRow = Selectable<IdempotencyKeysTable>;

/** How long a key is remembered: 24 hours, beyond any client's retries (docs/ARCHITECTURE.md#idempotency). */
export const KEY_LIFETIME = sql`interval '24 hours'`;

/** A key as the records hold it: per business and route. */
export interface IdempotencyKey {
  businessId: string;
  route: string;
  key: string;
}

/** A request's hold on a key: the key, and the lease id that is the key's while the hold lasts. */
export interface Lease extends IdempotencyKey {
  leaseId: string;
}

/** The row of a key. */
const ofKey = (key: IdempotencyKey) => (eb: ExpressionBuilder<Database, 'idempotency_keys'>) =>
  eb.and([eb('business_id', '=', key.businessId), eb('route', '=', key.route), eb('key', '=', key.key)]);

export const idempotencyRepository = {
  /**
   * Takes the key for a request. ON CONFLICT DO NOTHING makes the database decide between two
   * concurrent first requests: exactly one gets the row back and runs.
   */
  async claim(db: Db, claim: Lease, requestHash: string): Promise<boolean> {
    const row = await db
      .insertInto('idempotency_keys')
      .values({
        business_id: claim.businessId,
        route: claim.route,
        key: claim.key,
        request_hash: requestHash,
        lease_id: claim.leaseId,
      })
      .onConflict((oc) => oc.columns(['business_id', 'route', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    return row !== undefined;
  },

  /** The live (unexpired) record of a key. */
  find(db: Db, key: IdempotencyKey): Promise<IdempotencyRow | undefined> {
    return db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where(ofKey(key))
      .where('created_at', '>', sql<string>`now() - ${KEY_LIFETIME}`)
      .executeTakeFirst();
  },

  /** Removes this key's record if it has expired, so the key can be claimed afresh. */
  async deleteIfExpired(db: Db, key: IdempotencyKey): Promise<void> {
    await db
      .deleteFrom('idempotency_keys')
      .where(ofKey(key))
      .where('created_at', '<=', sql<string>`now() - ${KEY_LIFETIME}`)
      .execute();
  },

  /**
   * Gives a running claim of the same request that is older than `abandonedAfterSeconds` (and not
   * expired) to a new lease; false when there is none. The row is locked by the update, so a
   * request that stores its answer at the same moment either comes first (the claim is then no
   * longer running) or finds its lease gone.
   */
  async takeOver(db: Db, claim: Lease, requestHash: string, abandonedAfterSeconds: number): Promise<boolean> {
    const row = await db
      .updateTable('idempotency_keys')
      .set({ lease_id: claim.leaseId, created_at: sql<string>`now()` })
      .where(ofKey(claim))
      .where('request_hash', '=', requestHash)
      .where('status_code', 'is', null)
      .where('created_at', '<', sql<string>`now() - make_interval(secs => ${abandonedAfterSeconds})`)
      .where('created_at', '>', sql<string>`now() - ${KEY_LIFETIME}`)
      .returning('key')
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * Stores the answer of the lease's request: the first time, or again with the same status (the
   * answer as finally sent replaces the one stored in the send's transaction). False when the
   * lease is no longer the key's.
   */
  async complete(db: Db, claim: Lease, statusCode: number, response: unknown): Promise<boolean> {
    const result = await db
      .updateTable('idempotency_keys')
      .set({ status_code: statusCode, response: JSON.stringify(response) })
      .where(ofKey(claim))
      .where('lease_id', '=', claim.leaseId)
      .where((eb) => eb.or([eb('status_code', 'is', null), eb('status_code', '=', statusCode)]))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },

  /** Forgets a running claim (the request failed with a 5xx or never answered), so a retry runs. */
  async release(db: Db, claim: Lease): Promise<void> {
    await db
      .deleteFrom('idempotency_keys')
      .where(ofKey(claim))
      .where('lease_id', '=', claim.leaseId)
      .where('status_code', 'is', null)
      .execute();
  },

  /** Forgets every claim still without its answer (restart-recovery.ts); how many. */
  async releaseUnanswered(db: Db): Promise<number> {
    const result = await db.deleteFrom('idempotency_keys').where('status_code', 'is', null).executeTakeFirst();
    return Number(result.numDeletedRows);
  },

  /** Deletes expired records of every business (periodic cleanup); returns how many went. */
  async deleteExpired(db: Db, limit: number): Promise<number> {
    const result = await db
      .deleteFrom('idempotency_keys')
      .where(({ eb, refTuple, selectFrom }) =>
        eb(
          refTuple('business_id', 'route', 'key'),
          'in',
          selectFrom('idempotency_keys')
            .select(['business_id', 'route', 'key'])
            .where('created_at', '<=', sql<string>`now() - ${KEY_LIFETIME}`)
            .limit(limit) as never,
        ),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};
