import { sql, type RawBuilder } from 'kysely';
import type pg from 'pg';

/**
 * The first key of the advisory locks that show a worker process alive (the two-key form, which
 * the service's transaction locks, keyed by one bigint, never share); the second is the backend pid
 * of the session that holds it.
 */
export const WORKER_LOCK_CLASS = 0x6f62_7801;

/** Whether the worker session `owner` still holds its lock in this database (the claims' take-over). */
export function sessionAlive(owner: RawBuilder<unknown>) {
  return sql<boolean>`exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.classid = ${WORKER_LOCK_CLASS}::oid and l.objid = ${owner}::oid
      and l.objsubid = 2 and l.granted
      and l.database = (select oid from pg_database where datname = current_database()))`;
}

type Log = { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };

export interface WorkerSessionOptions {
  /** A connection of its own, outside the pool (DatabaseHandle.connect). */
  connect(): Promise<pg.Client>;
  log?: Log;
  /** Wait before connecting again after the session was lost (default 1 s). */
  retryMs?: number;
}

/**
 * Shows the other processes that this one is alive: a session-level advisory lock, held on a
 * connection of its own for as long as the process runs, keyed by that session's backend pid, which
 * the jobs the process claims record (outbox.locked_by). PostgreSQL releases the lock the moment the
 * session ends, whether the process stopped, was killed or lost its connection, so any process can
 * take the jobs claimed under it over at once (outboxRepository.takeOverAbandoned) instead of
 * waiting for their leases to run out. A heartbeat row would say the same only after a timeout.
 *
 * While the session is lost, claims carry no owner (their lease alone protects them), and those made
 * under the lost one are taken over as a dead process's would be: the claim guard
 * (outbox.repository.ts heldBy) keeps this process from ending them afterwards. A new session has a
 * new pid, so an id is never held twice.
 */
export class WorkerSession {
  private client: pg.Client | undefined;
  private held: number | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly options: WorkerSessionOptions) {}

  /** The owner id claims record while the lock is held; undefined while it is not. */
  id(): number | undefined {
    return this.held;
  }

  /** Takes the lock (or keeps trying in the background, should the database not answer). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect().catch(() => undefined);
  }

  /** Ends the session, which releases the lock; call once the worker holds no job. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    this.held = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = await this.options.connect().catch((err: unknown) => {
      this.later();
      throw err;
    });
    const lost = (err?: unknown) => {
      if (this.client !== client) return;
      this.client = undefined;
      this.held = undefined;
      this.options.log?.warn(
        { err },
        'worker session lost: jobs claimed until it is back are protected by their lease alone',
      );
      this.later();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      const pid = rows[0].pid;
      // The key is this session's own pid, which no other live session has: the lock is free.
      await client.query('select pg_advisory_lock($1, $2)', [WORKER_LOCK_CLASS, pid]);
      if (this.stopped) throw new Error('stopped');
      this.client = client;
      this.held = pid;
    } catch (err) {
      await client.end().catch(() => undefined);
      this.later();
      throw err;
    }
  }

  private later(): void {
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      void this.connect().then(
        () => this.options.log?.info({ id: this.held }, 'worker session back'),
        () => undefined,
      );
    }, this.options.retryMs ?? 1_000);
  }
}
