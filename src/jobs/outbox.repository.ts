import { sql, type ExpressionBuilder, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../db/database.ts';
import { jsonRows } from '../db/json-rows.ts';
import { sessionAlive } from './worker-session.ts';
import type { Database, OutboxTable } from '../db/types.ts';

export type OutboxJob = Selectable<OutboxTable>;

type NewJob = { business_id: string; id: string; kind: string; ref_id: string; run_at?: string };

/** The kinds of work that keep at most one waiting job per record (scheduleOnePerRef). */
export const AI_TIMER_KINDS = ['ai_sentiment', 'ai_follow_up', 'ai_inactivity', 'ai_manual_control'] as const;
export type OnePerRefKind = 'ai_run' | (typeof AI_TIMER_KINDS)[number];
/** What becomes of a record's waiting job when another is scheduled (scheduleOnePerRef). */
export type KeepWaiting = 'latest' | 'earliest' | 'existing';

// The conflict targets name each partial unique index by its columns and its very predicate.
const AI_RUN_WAITING = sql`(business_id, ref_id) where kind = 'ai_run' and state = 'pending'`;
const AI_TIMER_WAITING = sql.raw(
  `(business_id, kind, ref_id) where kind in (${AI_TIMER_KINDS.map((k) => `'${k}'`).join(', ')}) and state = 'pending'`,
);

export const outboxRepository = {
  async insert(db: Db, row: NewJob): Promise<void> {
    await db.insertInto('outbox').values(row).execute();
  },

  async insertMany(db: Db, rows: NewJob[]): Promise<void> {
    if (rows.length > 0) await db.insertInto('outbox').values(rows).execute();
  },

  /**
   * Jobs of a kind that keeps at most one waiting (pending) job per record: ai_run, one per
   * conversation (index outbox_ai_run_waiting, migration 0031), and the AI agent's timers, one of
   * each kind per conversation (outbox_ai_timer_waiting, migration 0033). Each is due `delay_seconds`
   * from now (the database's clock); a record that has a waiting job already keeps it, moved to the
   * later of the two times (`latest`: work asked for again while it waits runs once, after the last
   * ask), to the sooner (`earliest`: a cause that wants it now pulls it in), or left as it is
   * (`existing`: a job that found itself early defers to one a newer cause scheduled). A job running
   * meanwhile is not waiting: the new one waits beside it.
   */
  async scheduleOnePerRef(
    db: Db,
    kind: OnePerRefKind,
    jobs: { business_id: string; id: string; ref_id: string; delay_seconds: number }[],
    keep: KeepWaiting = 'latest',
  ): Promise<void> {
    if (jobs.length === 0) return;
    const onConflict = {
      latest: sql`do update set run_at = greatest(outbox.run_at, excluded.run_at)`,
      earliest: sql`do update set run_at = least(outbox.run_at, excluded.run_at)`,
      existing: sql`do nothing`,
    }[keep];
    await sql`insert into outbox (business_id, id, kind, ref_id, run_at)
      select v.business_id, v.id, ${kind}, v.ref_id, now() + make_interval(secs => v.delay_seconds)
      from ${jsonRows('v', { business_id: 'uuid', id: 'uuid', ref_id: 'uuid', delay_seconds: 'float8' }, jobs)}
      on conflict ${kind === 'ai_run' ? AI_RUN_WAITING : AI_TIMER_WAITING} ${onConflict}`.execute(db);
  },

  /** Whether the record has a waiting job of the kind (scheduleOnePerRef) besides `job`. */
  async hasWaiting(db: Db, job: OutboxJob): Promise<boolean> {
    const row = await db
      .selectFrom('outbox')
      .select('id')
      .where('business_id', '=', job.business_id)
      .where('ref_id', '=', job.ref_id)
      .where('kind', '=', job.kind)
      .where('state', '=', 'pending')
      .where('id', '!=', job.id)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * Claims up to `limit` due jobs of one kind. SKIP LOCKED lets several processes claim side by side
   * without taking the same job; the lease marks a job as in the hands of one worker until it ends,
   * and `owner` (the claiming process's worker session, null without one) as long as it is alive.
   */
  claim(db: Db, kind: string, limit: number, leaseSeconds: number, owner: number | null = null): Promise<OutboxJob[]> {
    return newClaim(db, leaseSeconds, owner, (jobs) =>
      jobs
        .where('kind', '=', kind)
        .where('state', '=', 'pending')
        .where('run_at', '<=', sql<string>`now()`)
        .orderBy('run_at')
        .limit(limit),
    );
  },

  async complete(db: Db, job: OutboxJob): Promise<void> {
    await db
      .updateTable('outbox')
      .set({ state: 'done', locked_until: null, locked_by: null, last_error: null })
      .where((eb) => heldBy(eb, job))
      .execute();
  },

  /**
   * Completes running jobs by business and id, in one statement (jsonRows): the send job's, in the
   * transaction that records their messages as SENT, so a job is done exactly when its message's
   * outcome is stored.
   */
  async completeMany(db: Db, jobs: { businessId: string; id: string }[]): Promise<void> {
    if (jobs.length === 0) return;
    await sql`
      update outbox o set state = 'done', locked_until = null, locked_by = null, last_error = null
      from ${jsonRows(
        'v',
        { business_id: 'uuid', id: 'uuid' },
        jobs.map((j) => ({ business_id: j.businessId, id: j.id })),
      )}
      where o.business_id = v.business_id and o.id = v.id and o.state = 'running'`.execute(db);
  },

  async retryAt(db: Db, job: OutboxJob, delaySeconds: number, error: string): Promise<void> {
    await db
      .updateTable('outbox')
      .set({
        state: 'pending',
        locked_until: null,
        locked_by: null,
        last_error: error,
        // Woken while it ran (runNow moved its run_at): what it waited for may have come after it looked.
        run_at: sql`case when run_at > ${job.run_at} then now() else now() + make_interval(secs => ${delaySeconds}) end`,
      })
      .where((eb) => heldBy(eb, job))
      .execute();
  },

  /**
   * Makes the waiting jobs of a kind about one record due now (a job that waited for something
   * another job just finished); whether there was one. One running now is marked too: if it asks to
   * be retried, it comes again at once (retryAt), since it may have looked before the thing it
   * waited for was there.
   */
  async runNow(db: Db, businessId: string, kind: string, refId: string): Promise<boolean> {
    const rows = await db
      .updateTable('outbox')
      .set({ run_at: sql`now()` })
      .where('business_id', '=', businessId)
      .where('kind', '=', kind)
      .where('ref_id', '=', refId)
      .where((eb) =>
        eb.or([
          eb.and([eb('state', '=', 'pending'), eb('run_at', '>', sql<string>`now()`)]),
          eb('state', '=', 'running'),
        ]),
      )
      .returning('id')
      .execute();
    return rows.length > 0;
  },

  async fail(db: Db, job: OutboxJob, error: string): Promise<void> {
    await db
      .updateTable('outbox')
      .set({ state: 'failed', locked_until: null, locked_by: null, last_error: error })
      .where((eb) => heldBy(eb, job))
      .execute();
  },

  /**
   * Takes over up to `limit` jobs whose worker stopped (crash, kill) while holding them: their lease
   * ran out, or the worker session they were claimed under has ended (its lock is no longer held,
   * worker-session.ts). A new claim (attempts + 1, a new lease), so the worker that lost them, should
   * it come back, changes them no more, and of two processes sweeping at once only one takes each.
   */
  takeOverAbandoned(
    db: Db,
    kind: string,
    limit: number,
    leaseSeconds: number,
    owner: number | null = null,
  ): Promise<OutboxJob[]> {
    return newClaim(db, leaseSeconds, owner, (jobs) =>
      jobs
        .where('kind', '=', kind)
        .where('state', '=', 'running')
        .where((eb) =>
          eb.or([
            eb('locked_until', '<', sql<string>`now()`),
            eb.and([eb('locked_by', 'is not', null), sql<boolean>`not ${sessionAlive(sql.ref('locked_by'))}`]),
          ]),
        )
        .limit(limit),
    );
  },

  /** Ends the lease of every running job now (restart-recovery.ts); how many. */
  async endLeases(db: Db): Promise<number> {
    const result = await db
      .updateTable('outbox')
      .set({ locked_until: sql<string>`now() - interval '1 second'` })
      .where('state', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  },

  /**
   * A new lease of `leaseSeconds` from now for a job still under the claim `job` was read with
   * (long work renews it as it goes); false when that claim has ended (taken over).
   */
  async extendLease(db: Db, job: OutboxJob, leaseSeconds: number): Promise<boolean> {
    const result = await db
      .updateTable('outbox')
      .set({ locked_until: sql`now() + make_interval(secs => ${leaseSeconds})` })
      .where((eb) => heldBy(eb, job))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  },

  async release(db: Db, job: OutboxJob): Promise<void> {
    await db
      .updateTable('outbox')
      .set({ state: 'pending', locked_until: null, locked_by: null })
      .where((eb) => heldBy(eb, job))
      .execute();
  },
};

type JobQuery = SelectQueryBuilder<Database, 'outbox', { business_id: string; id: string }>;

/**
 * A new claim (running, attempts + 1, a lease of `leaseSeconds`) on the jobs `pick` selects,
 * locked as they are read and skipping those another process holds: of two processes claiming at
 * once, each job goes to one.
 */
function newClaim(
  db: Db,
  leaseSeconds: number,
  owner: number | null,
  pick: (jobs: JobQuery) => JobQuery,
): Promise<OutboxJob[]> {
  return db
    .updateTable('outbox')
    .set({
      state: 'running',
      attempts: sql`attempts + 1`,
      locked_until: sql`now() + make_interval(secs => ${leaseSeconds})`,
      locked_by: owner,
    })
    .where(({ eb, refTuple, selectFrom }) =>
      eb(
        refTuple('business_id', 'id'),
        'in',
        pick(selectFrom('outbox').select(['business_id', 'id']))
          .forUpdate()
          .skipLocked() as never,
      ),
    )
    .returningAll()
    .execute();
}

/**
 * The job, still under the claim `job` was read with: each claim (and take-over) counts an
 * attempt, so a worker whose lease ran out and was taken over changes the job no more.
 */
function heldBy(eb: ExpressionBuilder<Database, 'outbox'>, job: OutboxJob) {
  return eb.and([
    eb('business_id', '=', job.business_id),
    eb('id', '=', job.id),
    eb('state', '=', 'running'),
    eb('attempts', '=', job.attempts),
  ]);
}
