import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { OutboxTable } from '../db/types.ts';

export type OutboxJob = Selectable<OutboxTable>;

type NewJob = { business_id: string; id: string; kind: string; ref_id: string; run_at?: string };

export const outboxRepository = {
  async insert(db: Db, row: NewJob): Promise<void> {
    await db.insertInto('outbox').values(row).execute();
  },

  async insertMany(db: Db, rows: NewJob[]): Promise<void> {
    if (rows.length > 0) await db.insertInto('outbox').values(rows).execute();
  },

  /**
   * Claims up to `limit` due jobs of one kind. SKIP LOCKED lets several processes claim side by side
   * without taking the same job; the lease marks a job as in the hands of one worker until it ends.
   */
  claim(db: Db, kind: string, limit: number, leaseSeconds: number): Promise<OutboxJob[]> {
    return db
      .updateTable('outbox')
      .set({
        state: 'running',
        attempts: sql`attempts + 1`,
        locked_until: sql`now() + make_interval(secs => ${leaseSeconds})`,
      })
      .where(({ eb, refTuple, selectFrom }) =>
        eb(
          refTuple('business_id', 'id'),
          'in',
          selectFrom('outbox')
            .select(['business_id', 'id'])
            .where('kind', '=', kind)
            .where('state', '=', 'pending')
            .where('run_at', '<=', sql<string>`now()`)
            .orderBy('run_at')
            .limit(limit)
            .forUpdate()
            .skipLocked() as never,
        ),
      )
      .returningAll()
      .execute();
  },

  async complete(db: Db, job: OutboxJob): Promise<void> {
    await db.updateTable('outbox').set({ state: 'done', locked_until: null, last_error: null })
      .where('business_id', '=', job.business_id).where('id', '=', job.id).execute();
  },

  async retryAt(db: Db, job: OutboxJob, delaySeconds: number, error: string): Promise<void> {
    await db.updateTable('outbox')
      .set({ state: 'pending', locked_until: null, last_error: error, run_at: sql`now() + make_interval(secs => ${delaySeconds})` })
      .where('business_id', '=', job.business_id).where('id', '=', job.id).execute();
  },

  async fail(db: Db, job: OutboxJob, error: string): Promise<void> {
    await db.updateTable('outbox').set({ state: 'failed', locked_until: null, last_error: error })
      .where('business_id', '=', job.business_id).where('id', '=', job.id).execute();
  },

  /** Jobs whose worker stopped (crash, kill) while holding them: their lease has run out. */
  abandoned(db: Db, kind: string, limit: number): Promise<OutboxJob[]> {
    return db.selectFrom('outbox').selectAll()
      .where('kind', '=', kind).where('state', '=', 'running').where('locked_until', '<', sql<string>`now()`)
      .limit(limit).execute();
  },

  async release(db: Db, job: OutboxJob): Promise<void> {
    await db.updateTable('outbox').set({ state: 'pending', locked_until: null })
      .where('business_id', '=', job.business_id).where('id', '=', job.id).where('state', '=', 'running').execute();
  },
};
