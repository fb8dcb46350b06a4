import { sql, type RawBuilder } from 'kysely';
import type { Db } from './database.ts';

/** A transaction-scoped advisory lock's name: a business and a key within it (a contact's identity, a conversation). */
export interface LockKey {
  businessId: string;
  key: string;
}

/**
 * The locks of lockMany on several keys, in the order given, as an expression (the number of locks
 * taken), so that a statement can take them and read something in one round trip.
 */
export function advisoryLocks(keys: LockKey[]): RawBuilder<number> {
  const names = JSON.stringify(keys.map((k) => `${k.businessId}:${k.key}`));
  return sql<number>`(select count(pg_advisory_xact_lock(hashtextextended(k, 0))) from jsonb_array_elements_text(${names}::jsonb) as k)`;
}

/**
 * Transaction-scoped advisory locks, so concurrent writers that would create the same row take
 * turns: one statement, the locks taken in the order given (callers sort, so two writers locking
 * overlapping sets cannot deadlock).
 */
export async function lockMany(db: Db, keys: LockKey[]): Promise<void> {
  if (keys.length === 0) return;
  await sql`select ${advisoryLocks(keys)}`.execute(db);
}
