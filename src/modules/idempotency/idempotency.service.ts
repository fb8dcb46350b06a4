import type { Db } from '../../db/database.ts';
import { conflict } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { idempotencyRepository, type IdempotencyKey, type Lease } from './idempotency.repository.ts';

/**
 * How long a claim may run before a repeat of the same request may take it over. A send stores its
 * answer in the transaction that writes the message (storeAnswerIn), so a claim still running after
 * this long belongs to a request that died before writing anything (a crash, a lost connection):
 * running it again cannot send twice. Requests answer in milliseconds; a minute leaves a wide margin.
 */
export const ABANDONED_AFTER_SECONDS = 60;

/** What to do with a request that carries an Idempotency-Key. */
export type IdempotencyDecision =
  | { kind: 'run'; claim: IdempotencyClaim }
  | { kind: 'replay'; statusCode: number; response: unknown }
  /** The key was used for a different request. */
  | { kind: 'reused' }
  /** The first request with this key has not answered yet. */
  | { kind: 'running' };

/** One request's hold on a key, until its answer is stored or forgotten. */
export type IdempotencyClaim = Lease;

/**
 * Stores the answer of a claimed request in the caller's transaction, the one that writes what the
 * request did, so both are committed or neither. 409 `conflict` (rolling the transaction back) when
 * the claim is no longer the key's: a repeat took it over, and only one of them may act.
 */
export async function storeAnswerIn(
  trx: Db,
  claim: IdempotencyClaim | undefined,
  statusCode: number,
  response: unknown,
): Promise<void> {
  if (!claim) return;
  if (!(await idempotencyRepository.complete(trx, claim, statusCode, response))) {
    throw conflict("this request's Idempotency-Key was taken over by a repeat of it; the repeat is the one that runs");
  }
}

/**
 * Idempotency keys of the send endpoints (docs/ARCHITECTURE.md#idempotency): per business and route, kept 24 hours. The
 * first request with a key runs and its answer is stored; repeats get that answer back. 5xx answers
 * are not stored, so the client can retry them with the same key.
 */
export class IdempotencyService {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly db: Db) {}

  /**
   * Decides what a request with a key does; with `run`, the claim it holds (its lease). A running
   * claim of the same request older than ABANDONED_AFTER_SECONDS is taken over.
   */
  async begin(key: IdempotencyKey, requestHash: string): Promise<IdempotencyDecision> {
    const claim = { ...key, leaseId: newId() };
    // Two rounds at most: the second follows the removal of an expired record of the same key.
    for (let round = 0; round < 2; round += 1) {
      if (await idempotencyRepository.claim(this.db, claim, requestHash)) return { kind: 'run', claim };
      const row = await idempotencyRepository.find(this.db, key);
      if (row) {
        if (row.request_hash !== requestHash) return { kind: 'reused' };
        if (row.status_code !== null) return { kind: 'replay', statusCode: row.status_code, response: row.response };
        if (await idempotencyRepository.takeOver(this.db, claim, requestHash, ABANDONED_AFTER_SECONDS))
          return { kind: 'run', claim };
        return { kind: 'running' };
      }
      await idempotencyRepository.deleteIfExpired(this.db, key);
    }
    // The key was freed and taken again between our statements: the other request holds it.
    return { kind: 'running' };
  }

  /**
   * Stores the final answer of a claimed request as it is sent (replacing one stored by
   * storeAnswerIn); a 5xx frees the key instead. Nothing happens when the claim was taken over.
   */
  async finish(claim: IdempotencyClaim, statusCode: number, response: unknown): Promise<void> {
    if (statusCode >= 500) return this.release(claim);
    await idempotencyRepository.complete(this.db, claim, statusCode, response);
  }

  /** Frees a claim whose request produced no storable answer. */
  release(claim: IdempotencyClaim): Promise<void> {
    return idempotencyRepository.release(this.db, claim);
  }

  /** Deletes the expired records of every business, in batches; returns how many went. */
  async deleteExpired(batch = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await idempotencyRepository.deleteExpired(this.db, batch);
      total += deleted;
      if (deleted < batch) return total;
    }
  }

  /**
   * Hourly cleanup of expired keys. Expired records are ignored on lookup anyway; this only keeps
   * the table small. Errors are passed to `onError` and the timer goes on.
   */
  startCleanup(onError: (err: unknown) => void, intervalMs = 3_600_000): void {
    if (this.timer) return;
    const run = () => void this.deleteExpired().catch(onError);
    this.timer = setInterval(run, intervalMs);
    this.timer.unref();
  }

  stopCleanup(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
