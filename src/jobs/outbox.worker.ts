import type { Db } from '../db/database.ts';
import { newId } from '../lib/ids.ts';
import { outboxRepository, type KeepWaiting, type OnePerRefKind, type OutboxJob } from './outbox.repository.ts';

/**
 * What a handler decided about one job. `recorded: true` says the handler has already ended the job
 * itself (done, failed or due again), in the transaction that stored the job's result (one commit
 * for both). `interrupted` says it stopped part way because the worker is stopping (its `stopping`
 * signal): the job is due again at once, to go on from where it is, and counts no failure.
 */
export type JobOutcome = (
  { done: true } | { retryInSeconds: number; error: string } | { failed: string } | { interrupted: true }
) & {
  recorded?: true;
};

/** The code behind one kind of durable work (provider sends, media fetches, webhook deliveries). */
export interface JobHandler {
  kind: string;
  /** Jobs of this kind run at once in one process. */
  concurrency: number;
  /** Seconds a claimed job stays with its worker; past that it counts as abandoned. */
  leaseSeconds: number;
  /**
   * `stopping` is aborted when the worker stops (the server shuts down): long work ends between two
   * of its steps with `{ interrupted: true }` rather than hold the stop up.
   */
  handle(job: OutboxJob, stopping?: AbortSignal): Promise<JobOutcome>;
  /**
   * A job whose worker stopped while holding it. Idempotent work is run again ('retry'); work that
   * must never happen twice (a provider send whose outcome is unknown) is given up by the handler.
   * `trx` is the transaction that then releases or fails the job: what the handler records with it
   * (a send's ERROR) is committed together with the job's end, or not at all.
   */
  onAbandoned(job: OutboxJob, trx: Db): Promise<'retry' | 'give_up'>;
}

/** When a repeatable job that failed its `attempts`-th try runs again: 30 s, 1 min, 2 min, ... capped at an hour. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(30 * 2 ** (attempts - 1), 3600);
}

/**
 * The tries of work that may safely run again (a media download, an embedding): a retryable failure
 * comes back after 30 s, 1 min, 2 min, ... capped at an hour, until `maxAttempts`; a job whose
 * worker stopped runs again too, unless it has used them all (one that stops its worker every time,
 * say by exhausting its memory, must end).
 */
export function repeatableTries(maxAttempts: number) {
  return {
    afterFailure(job: OutboxJob, retryable: boolean, error: string): JobOutcome {
      if (!retryable || job.attempts >= maxAttempts) return { failed: error };
      return { retryInSeconds: retryDelaySeconds(job.attempts), error };
    },
    onAbandoned: async (job: OutboxJob): Promise<'retry' | 'give_up'> =>
      job.attempts >= maxAttempts ? 'give_up' : 'retry',
  };
}

export interface WorkerOptions {
  /** How often an idle worker looks for due jobs (wake() makes fresh work start at once). */
  pollMs?: number;
  /** How often abandoned jobs are looked for. */
  sweepMs?: number;
  /**
   * This process's worker session (PostgreSQL): claims record its id, so other processes take them
   * over as soon as it ends rather than when their leases run out (worker-session.ts).
   */
  session?: { id(): number | undefined };
}

type NewJob = { businessId: string; kind: string; refId: string; runAt?: string };

/** Adds a job to the outbox inside the caller's transaction, so it exists exactly when its cause does. */
export function enqueueJob(trx: Db, job: NewJob): Promise<void> {
  return outboxRepository.insert(trx, {
    business_id: job.businessId,
    id: newId(),
    kind: job.kind,
    ref_id: job.refId,
    run_at: job.runAt,
  });
}

/** enqueueJob for several jobs in one statement. */
export function enqueueJobs(trx: Db, jobs: NewJob[]): Promise<void> {
  return outboxRepository.insertMany(
    trx,
    jobs.map((job) => ({
      business_id: job.businessId,
      id: newId(),
      kind: job.kind,
      ref_id: job.refId,
      run_at: job.runAt,
    })),
  );
}

/**
 * Schedules, in the caller's transaction, the one waiting job of each record of a kind that keeps
 * one (outboxRepository.scheduleOnePerRef): due `delaySeconds` from now, or the waiting one moved
 * that late (`latest`) or that soon (`earliest`), or kept as it is (`existing`).
 */
export function scheduleJobs(
  trx: Db,
  kind: OnePerRefKind,
  jobs: { businessId: string; refId: string; delaySeconds: number }[],
  keep: KeepWaiting = 'latest',
): Promise<void> {
  return outboxRepository.scheduleOnePerRef(
    trx,
    kind,
    jobs.map((j) => ({ business_id: j.businessId, id: newId(), ref_id: j.refId, delay_seconds: j.delaySeconds })),
    keep,
  );
}

/**
 * Runs the outbox: claims due jobs with FOR UPDATE SKIP LOCKED (so several server processes share
 * the work), hands them to their handler, and records the outcome. Nothing lives only in memory:
 * a crash leaves every job in the table, to be claimed again or given up by its handler's rule.
 */
export class OutboxWorker {
  private running = false;
  private readonly inFlight = new Map<string, Set<Promise<void>>>();
  private readonly wakers = new Map<string, () => void>();
  /** Kinds woken while their loop was busy: the next idle() returns at once instead of waiting. */
  private readonly woken = new Set<string>();
  private readonly loops: Promise<void>[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Aborted by stop(): the handlers' signal to end long work between two steps. */
  private stopping = new AbortController();

  private readonly handlers: JobHandler[] = [];

  constructor(
    private readonly db: Db,
    private readonly log: { error(obj: object, msg: string): void },
    private readonly options: WorkerOptions = {},
  ) {}

  /** Adds the handler of one kind of work; call before start(). */
  register(handler: JobHandler): this {
    this.handlers.push(handler);
    return this;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    for (const handler of this.handlers) {
      this.inFlight.set(handler.kind, new Set());
      this.loops.push(this.loop(handler));
    }
    const sweep = () => {
      void this.sweep().finally(() => {
        if (this.running) this.sweepTimer = setTimeout(sweep, this.options.sweepMs ?? 5_000);
      });
    };
    sweep();
  }

  /** Stops claiming and waits for the jobs in hand to finish. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopping.abort();
    clearTimeout(this.sweepTimer);
    for (const wake of this.wakers.values()) wake();
    await Promise.all(this.loops);
    await Promise.all([...this.inFlight.values()].flatMap((set) => [...set]));
    this.loops.length = 0;
  }

  /** Tells the worker new work of a kind is committed, so it need not wait for the next poll. */
  wake(kind: string): void {
    this.woken.add(kind);
    this.wakers.get(kind)?.();
  }

  private async loop(handler: JobHandler): Promise<void> {
    const inFlight = this.inFlight.get(handler.kind)!;
    // While due jobs are left behind (the last claim got all it asked for), the next claim waits for
    // this many free slots: one claim per finished job would cost a statement per job.
    const minClaim = Math.max(1, Math.floor(handler.concurrency / 4));
    let backlog = false;
    while (this.running) {
      let claimed: OutboxJob[] = [];
      const free = handler.concurrency - inFlight.size;
      if (free > 0 && (!backlog || free >= minClaim)) {
        try {
          claimed = await outboxRepository.claim(this.db, handler.kind, free, handler.leaseSeconds, this.owner());
          backlog = claimed.length === free;
        } catch (err) {
          this.log.error({ err, kind: handler.kind }, 'outbox claim failed');
        }
      }
      for (const job of claimed) {
        const run = this.run(handler, job).finally(() => {
          inFlight.delete(run);
          this.wake(handler.kind);
        });
        inFlight.add(run);
      }
      const wanted = backlog ? minClaim : 1;
      if (claimed.length === 0 || handler.concurrency - inFlight.size < wanted) await this.idle(handler.kind);
    }
  }

  private idle(kind: string): Promise<void> {
    if (this.woken.delete(kind)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.woken.delete(kind);
        resolve();
      };
      const timer = setTimeout(done, this.options.pollMs ?? 250);
      this.wakers.set(kind, done);
    });
  }

  private owner(): number | null {
    return this.options.session?.id() ?? null;
  }

  private async run(handler: JobHandler, job: OutboxJob): Promise<void> {
    try {
      const outcome = await handler.handle(job, this.stopping.signal);
      if (outcome.recorded) return;
      if ('done' in outcome) await outboxRepository.complete(this.db, job);
      else if ('interrupted' in outcome) await outboxRepository.release(this.db, job);
      else if ('failed' in outcome) await outboxRepository.fail(this.db, job, outcome.failed);
      else await outboxRepository.retryAt(this.db, job, outcome.retryInSeconds, outcome.error);
    } catch (err) {
      // A handler bug must not lose the job: it goes back to the queue after a pause.
      this.log.error({ err, kind: handler.kind, jobId: job.id }, 'outbox job failed unexpectedly');
      await outboxRepository.retryAt(this.db, job, 30, (err as Error).message).catch(() => undefined);
    }
  }

  private async sweep(): Promise<void> {
    for (const handler of this.handlers) {
      try {
        const abandoned = await outboxRepository.takeOverAbandoned(
          this.db,
          handler.kind,
          100,
          handler.leaseSeconds,
          this.owner(),
        );
        for (const job of abandoned) {
          await this.db.transaction().execute(async (trx) => {
            if ((await handler.onAbandoned(job, trx)) === 'retry') await outboxRepository.release(trx, job);
            else await outboxRepository.fail(trx, job, 'abandoned by a stopped worker');
          });
        }
      } catch (err) {
        this.log.error({ err, kind: handler.kind }, 'outbox sweep failed');
      }
    }
  }
}
