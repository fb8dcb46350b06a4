import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** The failure counts of throttled keys (digests of an email or a client address). */
export const signInFailuresRepository = {
  /**
   * The rows of `keys`, created at zero where missing, locked until the transaction ends so that
   * concurrent attempts on one key count one after the other. Locked in key order: two attempts
   * sharing both keys never wait for each other crosswise.
   */
  async lock(db: Db, keys: string[]) {
    const sorted = [...keys].sort();
    await db
      .insertInto('dashboard_sign_in_failures')
      .values(sorted.map((key) => ({ key, failures: 0, last_failure_at: '1970-01-01T00:00:00Z' })))
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return db
      .selectFrom('dashboard_sign_in_failures')
      .select(['key', 'failures', 'last_failure_at'])
      .where('key', 'in', sorted)
      .orderBy('key')
      .forUpdate()
      .execute();
  },

  record(db: Db, key: string, failures: number, at: string) {
    return db
      .updateTable('dashboard_sign_in_failures')
      .set({ failures, last_failure_at: at })
      .where('key', '=', key)
      .execute();
  },

  clear(db: Db, key: string) {
    return db.deleteFrom('dashboard_sign_in_failures').where('key', '=', key).execute();
  },

  /** Takes back one failure counted ahead of an attempt that then succeeded. */
  forgiveOne(db: Db, key: string) {
    return db
      .updateTable('dashboard_sign_in_failures')
      .set({ failures: sql`greatest(failures - 1, 0)` })
      .where('key', '=', key)
      .execute();
  },

  /** Rows whose last failure is older than `before`: their count would start again from zero anyway. */
  async deleteStale(db: Db, before: string): Promise<number> {
    const result = await db
      .deleteFrom('dashboard_sign_in_failures')
      .where('last_failure_at', '<', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};
