import { createHash } from 'node:crypto';
import type { SignInLimit } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { signInFailuresRepository } from './sign-in-failures.repository.ts';

export interface SignInLimits {
  account: SignInLimit;
  address: SignInLimit;
  lockMs: number;
}

/**
 * How long an attempt on a key with `failures` failures, the last at `lastFailureAt`, must wait (0:
 * it may go now). A count whose last failure is older than the lock's length starts again from zero.
 * From `delayAfter` failures on, an attempt waits 1 s after the last failure, doubling with each
 * further one; at `lockAfter` it waits out the lock.
 */
export function waitMs(failures: number, lastFailureAt: number, limit: SignInLimit, lockMs: number, now: number) {
  if (failures === 0 || lastFailureAt + lockMs <= now) return 0;
  if (failures >= limit.lockAfter) return lastFailureAt + lockMs - now;
  if (failures >= limit.delayAfter) return Math.max(0, lastFailureAt + 1000 * 2 ** (failures - limit.delayAfter) - now);
  return 0;
}

/** What one sign-in is throttled by: the account's email and the client's address. */
export interface ThrottleKeys {
  account: string;
  address: string;
}

const digest = (kind: string, value: string) => createHash('sha256').update(`${kind}\n${value}`).digest('hex');

/**
 * Sign-in throttling, per account (email) and per client address, counted in the database so every
 * server process shares it, and timed by the app's clock. Written here rather than with
 * rate-limiter-flexible: its PostgreSQL store keeps a table and a pool of its own outside the
 * migrations (the embedded engine has one connection, which Kysely holds) and reads the system
 * clock, and the existing rate-limit counters are fixed windows per business, while sign-in has no
 * business yet and needs a delay that grows with the failures.
 *
 * An attempt counts as a failure before the password is checked, and is taken back when it
 * succeeds: many attempts sent at once are counted as they arrive, not after their checks.
 */
export class SignInThrottle {
  constructor(
    private readonly db: Db,
    private readonly limits: SignInLimits,
    private readonly clock: Clock,
  ) {}

  static keys(email: string, address: string): ThrottleKeys {
    return { account: digest('account', email.toLowerCase()), address: digest('address', address) };
  }

  /** Counts an attempt and answers 0, or answers how many ms the caller must wait and counts nothing. */
  async attempt(keys: ThrottleKeys): Promise<number> {
    const now = this.clock.now();
    const limitOf = (key: string) => (key === keys.account ? this.limits.account : this.limits.address);
    return this.db.transaction().execute(async (trx) => {
      const rows = await signInFailuresRepository.lock(trx, [keys.account, keys.address]);
      const counted = rows.map((row) => {
        const last = Date.parse(row.last_failure_at);
        const failures = last + this.limits.lockMs > now ? row.failures : 0;
        return { key: row.key, failures, wait: waitMs(failures, last, limitOf(row.key), this.limits.lockMs, now) };
      });
      const wait = Math.max(0, ...counted.map((row) => row.wait));
      if (wait > 0) return wait;
      for (const row of counted) await signInFailuresRepository.record(trx, row.key, row.failures + 1, isoAt(now));
      return 0;
    });
  }

  /** A successful sign-in clears its account's failures and takes back its own count from its address. */
  async succeeded(keys: ThrottleKeys): Promise<void> {
    // In key order, as attempts lock them.
    await this.db.transaction().execute(async (trx) => {
      for (const key of [keys.account, keys.address].sort()) {
        if (key === keys.account) await signInFailuresRepository.clear(trx, key);
        else await signInFailuresRepository.forgiveOne(trx, key);
      }
    });
  }

  /** Rows no attempt would count any more. */
  deleteStale(): Promise<number> {
    return signInFailuresRepository.deleteStale(this.db, isoAt(this.clock.now() - this.limits.lockMs));
  }
}
