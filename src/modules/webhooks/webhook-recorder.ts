import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import {
  webhookDeliveriesRepository as deliveries,
  type ClaimedDelivery,
  type DeliveryEnd,
} from './webhook-deliveries.repository.ts';
import { nextDelayMs } from './webhook-schedule.ts';
import type { AttemptResult } from './webhook-sender.ts';
import { webhooksRepository } from './webhooks.repository.ts';

/** A webhook failing without a success for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;
/** Most attempts written in one transaction. */
const BATCH = 500;

interface Item {
  delivery: ClaimedDelivery;
  result: AttemptResult;
  forced?: DeliveryEnd;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Writes attempt outcomes: the log row, the delivery's next state and the webhook's health, in one
 * transaction per batch. Outcomes that arrive while a batch is being written wait for the next one
 * (group commit), so a busy worker pays a few statements per batch rather than per call.
 */
export class AttemptRecorder {
  private readonly queue: Item[] = [];
  private writing = false;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly random?: () => number,
  ) {}

  /** Resolves once the outcome is committed. `forced` sets the delivery's end instead of the retry rules. */
  record(delivery: ClaimedDelivery, result: AttemptResult, forced?: DeliveryEnd): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ delivery, result, forced, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.writing || this.queue.length === 0) return;
    this.writing = true;
    const batch = this.queue.splice(0, BATCH);
    void this.write(batch)
      .then(
        () => batch.forEach((item) => item.resolve()),
        (err: unknown) => batch.forEach((item) => item.reject(err)),
      )
      .finally(() => {
        this.writing = false;
        this.kick();
      });
  }

  private async write(batch: Item[]): Promise<void> {
    const nowMs = this.clock.now();
    const at = isoAt(nowMs);
    await this.db.transaction().execute(async (trx) => {
      await deliveries.lockForEnd(
        trx,
        batch.map((item) => item.delivery),
      );
      await deliveries.insertAttempts(
        trx,
        batch.map(({ delivery, result }) => ({
          business_id: delivery.business_id,
          id: newId(),
          webhook_id: delivery.webhook_id,
          delivery_id: delivery.id,
          message_id: delivery.message_id,
          attempt: delivery.attempts,
          status_code: result.statusCode,
          ok: result.verdict === 'delivered',
          error: result.error,
          duration_ms: result.durationMs,
          response_body: result.responseBody,
          created_at: at,
        })),
      );
      const delivered = batch
        .filter((item) => !item.forced && item.result.verdict === 'delivered')
        .map((item) => item.delivery);
      await deliveries.markDelivered(trx, delivered, at);
      const succeeded = new Map(delivered.map((d) => [`${d.business_id}/${d.webhook_id}`, d]));
      for (const d of succeeded.values())
        await webhooksRepository.recordSuccess(trx, d.business_id, d.webhook_id, at, isoAt(nowMs - 60_000));
      for (const item of batch) {
        if (item.forced) await deliveries.finish(trx, item.delivery, item.forced, at);
        else if (item.result.verdict !== 'delivered') await this.failure(trx, item.delivery, item.result, nowMs);
      }
    });
  }

  /** A failed attempt: the failure run, 410 and the 5-day rule, then retry on the schedule or give up. */
  private async failure(trx: Db, delivery: ClaimedDelivery, result: AttemptResult, nowMs: number): Promise<void> {
    const at = isoAt(nowMs);
    const { business_id: businessId, webhook_id: webhookId } = delivery;
    const failingSince = await webhooksRepository.recordFailure(trx, businessId, webhookId, at);
    if (result.verdict === 'gone') {
      await webhooksRepository.disable(trx, businessId, webhookId, 'endpoint_gone', at);
      await deliveries.finish(
        trx,
        delivery,
        { state: 'failed', error: `${result.error}: the endpoint is gone, webhook disabled` },
        at,
      );
      return;
    }
    // The webhook stops, its deliveries wait (pending) until someone enables it again.
    if (failingSince !== null && nowMs - Date.parse(failingSince) >= DISABLE_AFTER_MS) {
      await webhooksRepository.disable(trx, businessId, webhookId, 'failing_5_days', at);
    }
    const delay =
      result.verdict === 'retry'
        ? nextDelayMs(delivery.attempts - delivery.schedule_base, result.retryAfterMs, this.random)
        : null;
    const end: DeliveryEnd =
      delay === null
        ? {
            state: 'failed',
            error:
              result.verdict === 'retry'
                ? `gave up after ${delivery.attempts} attempts: ${result.error}`
                : (result.error ?? 'failed'),
          }
        : { state: 'pending', error: result.error ?? 'failed', nextAttemptAt: isoAt(nowMs + delay) };
    await deliveries.finish(trx, delivery, end, at);
  }
}
