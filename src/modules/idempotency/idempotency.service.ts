import type { Db } from '../../db/database.ts';
import { idempotencyRepository } from './idempotency.repository.ts';

/** What to do with a request that carries an Idempotency-Key. */
export type IdempotencyDecision =
  | { kind: 'run' }
  | { kind: 'replay'; statusCode: number; response: unknown }
  /** The key was used for a different request. */
  | { kind: 'reused' }
  /** The first request with this key has not answered yet. */
  | { kind: 'running' };

/** One request's hold on a key, until its answer is stored or forgotten. */
export interface IdempotencyClaim {
  businessId: string;
  route: string;
  key: string;
}

/**
 * Idempotency keys of the send endpoints (DESIGN.md): per business and route, kept 24 hours. The
 * first request with a key runs and its answer is stored; repeats get that answer back. 5xx answers
 * are not stored, so the client can retry them with the same key.
 */
export class IdempotencyService {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly db: Db) {}

  async begin(claim: IdempotencyClaim, requestHash: string): Promise<IdempotencyDecision> {
    const { businessId, route, key } = claim;
    // Two rounds at most: the second follows the removal of an expired record of the same key.
    for (let round = 0; round < 2; round += 1) {
      if (await idempotencyRepository.claim(this.db, businessId, route, key, requestHash)) return { kind: 'run' };
      const row = await idempotencyRepository.find(this.db, businessId, route, key);
      if (row) {
        if (row.request_hash !== requestHash) return { kind: 'reused' };
        if (row.status_code === null) return { kind: 'running' };
        return { kind: 'replay', statusCode: row.status_code, response: row.response };
      }
      await idempotencyRepository.deleteIfExpired(this.db, businessId, route, key);
    }
    // The key was freed and taken again between our statements: the other request holds it.
    return { kind: 'running' };
  }

  /** Stores the final answer of a claimed request; a 5xx frees the key instead. */
  async finish(claim: IdempotencyClaim, statusCode: number, response: unknown): Promise<void> {
    if (statusCode >= 500) return this.release(claim);
    await idempotencyRepository.complete(this.db, claim.businessId, claim.route, claim.key, statusCode, response);
  }

  /** Frees a claim whose request produced no storable answer. */
  release(claim: IdempotencyClaim): Promise<void> {
    return idempotencyRepository.release(this.db, claim.businessId, claim.route, claim.key);
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
