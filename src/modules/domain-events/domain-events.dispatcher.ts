import type { Db } from '../../db/database.ts';
import { nextTurn } from '../../db/slices.ts';
import { domainEventsRepository } from './domain-events.repository.ts';
import type { DomainEventType, Subscriber } from './domain-events.types.ts';

type Log = { error(obj: object, msg: string): void };

export interface DispatcherOptions {
  /** How often pending events are looked for (those of a crash, or of another process). */
  pollMs?: number;
  /** How long handed-over events stay readable before they are deleted. */
  keepMs?: number;
}

const DEFAULT_BATCH = 500;
const CLEANUP_EVERY_MS = 3600 * 1000;
const CLEANUP_BATCH = 5000;

/** One subscriber's passes in this process: one at a time; a pass asked for during one runs after it. */
class SubscriberRunner {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  /** Whether the running pass holds the subscriber's lock, so may have read before a caller's commit. */
  private locked = false;

  constructor(
    private readonly db: Db,
    readonly subscriber: Subscriber,
    private readonly log: () => Log | undefined,
    private readonly stopped: () => boolean,
  ) {}

  /** Resolves once a pass that started after this call has handed over every pending event. */
  run(): Promise<void> {
    if (!this.running) {
      this.running = this.pass().finally(() => {
        this.running = undefined;
        this.locked = false;
      });
      return this.running;
    }
    // A pass still waiting for the lock (another process hands over) reads after the caller's
    // commit: the caller waits for it rather than for one more pass behind it.
    if (!this.locked) return this.running;
    // The running pass may have read before the caller's commit: another one follows it.
    this.next ??= this.running.then(() => {
      this.next = undefined;
      return this.run();
    });
    return this.next;
  }

  private async pass(): Promise<void> {
    const { name } = this.subscriber;
    const size = this.subscriber.batchSize ?? DEFAULT_BATCH;
    try {
      while (!this.stopped()) {
        const { count, after } = await this.db.transaction().execute(async (trx) => {
          // Waits while another process hands this subscriber's events over, then reads what it left.
          const found = await domainEventsRepository.lock(trx, name);
          this.locked = true;
          if (!found) return { count: 0, after: undefined };
          const events = await domainEventsRepository.pending(trx, name, size);
          if (events.length === 0) return { count: 0, after: undefined };
          const after = await this.subscriber.handle(events, trx);
          await domainEventsRepository.handedOver(
            trx,
            name,
            events.map((e) => e.id),
          );
          return { count: events.length, after };
        });
        after?.();
        if (count < size) return;
        await nextTurn(); // requests that arrived meanwhile go before the next batch (see nextTurn)
      }
    } catch (err) {
      // Nothing was handed over; the next pass (a commit, the poll) tries again.
      this.log()?.error({ err, subscriber: name }, 'handing domain events over failed');
    }
  }
}

/**
 * Hands domain events to their subscribers after the commit (see domain-events.repository.ts for
 * the guarantees). A service that committed events awaits dispatch() before it answers, so what the
 * subscribers write is there when the caller reads; the poll (and the start) hands over what a
 * crash, or another server process, left.
 */
export class DomainEventDispatcher {
  private readonly runners = new Map<string, SubscriberRunner>();
  private log: Log | undefined;
  private started = false;
  private stopping = false;
  private poll: NodeJS.Timeout | undefined;
  private cleanup: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: DispatcherOptions = {},
  ) {}

  /** Adds a subscriber; once started, resolves when it is recorded (events from then on are its). */
  async register(subscriber: Subscriber): Promise<void> {
    if (this.runners.has(subscriber.name)) throw new Error(`subscriber ${subscriber.name} is registered already`);
    this.runners.set(
      subscriber.name,
      new SubscriberRunner(
        this.db,
        subscriber,
        () => this.log,
        () => this.stopping,
      ),
    );
    if (this.started) await domainEventsRepository.register(this.db, subscriber.name, subscriber.types);
  }

  /** Records the subscribers; from then on dispatch() hands events over. */
  async start(log: Log): Promise<void> {
    this.log = log;
    for (const { subscriber } of this.runners.values())
      await domainEventsRepository.register(this.db, subscriber.name, subscriber.types);
    this.started = true;
  }

  /**
   * The background part (a process that runs the workers): hands over what is pending now (left by a
   * crash) and then every pollMs, and deletes handed-over events past keepMs every hour.
   */
  startPolling(): void {
    void this.dispatch();
    this.poll = setInterval(() => void this.dispatch(), this.options.pollMs ?? 1000);
    this.poll.unref();
    this.cleanup = setInterval(() => void this.deleteOld(), CLEANUP_EVERY_MS);
    this.cleanup.unref();
  }

  /**
   * Hands the events committed so far to the subscribers taking any of `types` (all when omitted).
   * Never fails: a failure is logged and its events are handed over by a later pass.
   */
  async dispatch(types?: readonly DomainEventType[]): Promise<void> {
    if (this.stopping) return;
    const runners = [...this.runners.values()].filter(
      (r) => types === undefined || r.subscriber.types.some((t) => types.includes(t)),
    );
    await Promise.all(runners.map((r) => r.run()));
  }

  async stop(): Promise<void> {
    clearInterval(this.poll);
    clearInterval(this.cleanup);
    this.stopping = true;
    // A pass under way finishes its batch.
    await Promise.all([...this.runners.values()].map((r) => r.run()));
  }

  private async deleteOld(): Promise<void> {
    const cutoff = new Date(Date.now() - (this.options.keepMs ?? 3 * 24 * 3600 * 1000)).toISOString();
    try {
      let deleted = CLEANUP_BATCH;
      while (deleted === CLEANUP_BATCH)
        deleted = await domainEventsRepository.deleteHandedOver(this.db, cutoff, CLEANUP_BATCH);
    } catch (err) {
      this.log?.error({ err }, 'deleting old domain events failed');
    }
  }
}
