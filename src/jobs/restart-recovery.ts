import type { Db } from '../db/database.ts';
import { idempotencyRepository } from '../modules/idempotency/idempotency.repository.ts';
import { webhookDeliveriesRepository } from '../modules/webhooks/webhook-deliveries.repository.ts';
import { outboxRepository } from './outbox.repository.ts';

/**
 * Run at start on the embedded engine, before the workers. Only one process opens an embedded
 * database, so whatever is still in hand there was left by this service's previous run, stopped
 * before it finished: jobs and webhook deliveries are taken over at once rather than when their
 * leases run out (two minutes for a send, one for a delivery), and an Idempotency-Key whose request
 * never answered (it stored nothing: a send stores its answer in its own transaction) is freed
 * rather than answering 409 for a minute. On PostgreSQL other processes may hold them: jobs are
 * taken over when the worker session that claimed them ends (worker-session.ts), deliveries and
 * keys when their leases run out.
 */
export async function endLeasesOfStoppedRun(
  db: Db,
): Promise<{ jobs: number; deliveries: number; idempotencyKeys: number }> {
  return db.transaction().execute(async (trx) => ({
    jobs: await outboxRepository.endLeases(trx),
    deliveries: await webhookDeliveriesRepository.endLeases(trx),
    idempotencyKeys: await idempotencyRepository.releaseUnanswered(trx),
  }));
}
