import type { Dispatcher } from 'undici';
import type { Db } from '../../db/database.ts';
import { SecretBoxError, type SecretBox } from '../../lib/secret-box.ts';
import type { TargetPolicy } from '../../net/ssrf-guard.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { webhookDeliveriesRepository as deliveries, type ClaimedDelivery } from './webhook-deliveries.repository.ts';
import { openHeaders } from './webhook-header-secrets.ts';
import { AttemptRecorder } from './webhook-recorder.ts';
import { sendAttempt, type AttemptResult } from './webhook-sender.ts';

export interface WebhookWorkerOptions {
  /** Calls in flight at once in this process. */
  concurrency?: number;
  /** How often an idle worker looks for due deliveries (wake() starts fresh ones at once). */
  pollMs?: number;
  /** How long a claim is this worker's; past it (a crash) another worker sends the delivery again. */
  leaseMs?: number;
  /** Whole-call limit of one attempt (default 15 s). */
  attemptTimeoutMs?: number;
  /** How often held deliveries left with nothing before them are released (releaseStranded). */
  releaseStrandedMs?: number;
  /** Source of the retry jitter. */
  random?: () => number;
  /**
   * This process's worker session (PostgreSQL): claims record its id, and deliveries claimed under
   * a session that ended are sent again at once rather than when their leases run out.
   */
  session?: { id(): number | undefined };
  /** How often deliveries of ended sessions are looked for (default 5 s, as the outbox's sweep). */
  sweepMs?: number;
}

interface Deps {
  db: Db;
  clock: Clock;
  dispatcher: Dispatcher;
  policy: TargetPolicy;
  /** Opens the stored signing secrets (webhooks.service.ts seals them). */
  secrets: SecretBox;
  /** Opens the stored custom header values (webhooks.service.ts seals them). */
  headerValues: SecretBox;
  log: { error(obj: object, msg: string): void };
}

/**
 * Sends webhook deliveries: claims due ones (SKIP LOCKED, per-conversation order: see the
 * repository), makes one signed call each, and has the AttemptRecorder write the attempt and what
 * follows (delivered, retry on the schedule, given up, webhook disabled). At least once: a delivery
 * whose worker died is claimed again, under the same webhook-id: at once when its worker session
 * ended (PostgreSQL), else when its lease runs out.
 */
export class WebhookDeliveryWorker {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private readonly inFlight = new Map<Promise<void>, AbortController>();
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private readonly concurrency: number;
  private readonly recorder: AttemptRecorder;
  private releaseStrandedAt = 0;
  private sweepAt = 0;

  constructor(
    private readonly deps: Deps,
    private readonly options: WebhookWorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 128;
    this.recorder = new AttemptRecorder(deps.db, deps.clock, options.random);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Stops claiming, interrupts the calls in flight and puts their deliveries back in the queue. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wakeUp?.();
    await this.loopDone;
    for (const controller of this.inFlight.values()) controller.abort(new Error('server stopping'));
    await Promise.all([...this.inFlight.keys()]);
  }

  /** New deliveries were committed (or the clock moved): look for due work now. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const free = this.concurrency - this.inFlight.size;
      // Under load, claim in batches rather than one query per finished call.
      if (this.inFlight.size > 0 && free < Math.max(1, this.concurrency / 8)) {
        await this.idle();
        continue;
      }
      let claimed: ClaimedDelivery[] = [];
      if (free > 0) {
        const now = this.deps.clock.now();
        if (performance.now() >= this.releaseStrandedAt) {
          this.releaseStrandedAt = performance.now() + (this.options.releaseStrandedMs ?? 30_000);
          await deliveries
            .releaseStranded(this.deps.db)
            .catch((err: unknown) => this.deps.log.error({ err }, 'releasing held webhook deliveries failed'));
        }
        if (this.options.session && performance.now() >= this.sweepAt) {
          this.sweepAt = performance.now() + (this.options.sweepMs ?? 5_000);
          await deliveries
            .endLeasesOfEndedSessions(this.deps.db)
            .catch((err: unknown) => this.deps.log.error({ err }, 'taking over webhook deliveries failed'));
        }
        try {
          claimed = await deliveries.claim(
            this.deps.db,
            isoAt(now),
            isoAt(now + (this.options.leaseMs ?? 60_000)),
            free,
            this.options.session?.id() ?? null,
          );
        } catch (err) {
          this.deps.log.error({ err }, 'webhook delivery claim failed');
        }
      }
      for (const delivery of claimed) {
        const controller = new AbortController();
        const run = this.run(delivery, controller.signal)
          .catch((err: unknown) =>
            this.deps.log.error({ err, deliveryId: delivery.id }, 'webhook delivery failed unexpectedly'),
          )
          .finally(() => {
            this.inFlight.delete(run);
            this.wake();
          });
        this.inFlight.set(run, controller);
      }
      if (claimed.length < free || this.inFlight.size >= this.concurrency) await this.idle();
    }
  }

  private idle(): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollMs ?? 250);
      this.wakeUp = () => {
        this.woken = false;
        done();
      };
    });
  }

  private async run(delivery: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const nowMs = this.deps.clock.now();
    const { secrets, headerValues } = this.deps;
    let signing: ClaimedDelivery;
    try {
      signing = {
        ...delivery,
        headers: openHeaders(headerValues, { headers: delivery.headers, sealed: delivery.headers_sealed }),
        secret: secrets.open(delivery.secret),
        previous_secret: delivery.previous_secret === null ? null : secrets.open(delivery.previous_secret),
      };
    } catch (err) {
      if (!(err instanceof SecretBoxError)) throw err;
      // Nothing can be signed or sent as registered (SECRET_KEY changed without the old one among
      // the fallbacks): an attempt that fails, in the log, retried and given up by the usual rules.
      const unsigned: AttemptResult = {
        verdict: 'retry',
        statusCode: null,
        error: err.message,
        durationMs: 0,
        responseBody: null,
        retryAfterMs: null,
      };
      await this.recorder.record(delivery, unsigned);
      return;
    }
    let result: AttemptResult;
    try {
      result = await sendAttempt(signing, {
        dispatcher: this.deps.dispatcher,
        policy: this.deps.policy,
        nowMs,
        signal,
        elapsed: () => performance.now(),
        timeoutMs: this.options.attemptTimeoutMs,
      });
    } catch (err) {
      if (!signal.aborted) throw err;
      // Interrupted by a shutdown: the receiver may have it already; it comes again, same webhook-id,
      // without using up a retry.
      const interrupted: AttemptResult = {
        verdict: 'retry',
        statusCode: null,
        error: 'interrupted: the server stopped during the call',
        durationMs: 0,
        responseBody: null,
        retryAfterMs: null,
      };
      await this.recorder.record(delivery, interrupted, {
        state: 'pending',
        error: interrupted.error!,
        nextAttemptAt: isoAt(this.deps.clock.now()),
        scheduleBase: delivery.schedule_base + 1,
      });
      return;
    }
    await this.recorder.record(delivery, result);
  }
}
