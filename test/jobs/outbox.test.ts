import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import {
  enqueueJob,
  OutboxWorker,
  scheduleJobs,
  type JobHandler,
  type JobOutcome,
} from '../../src/jobs/outbox.worker.ts';
import { outboxRepository, type OutboxJob } from '../../src/jobs/outbox.repository.ts';
import { createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../helpers/test-app.ts';
import { newId } from '../../src/lib/ids.ts';

let t: TestApp;
let tenant: Tenant;
const silent = { error: () => undefined };

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

function handler(
  kind: string,
  decide: (job: OutboxJob) => Promise<JobOutcome> | JobOutcome,
  extra: Partial<JobHandler> = {},
): JobHandler {
  return {
    kind,
    concurrency: 4,
    leaseSeconds: 30,
    handle: async (job) => decide(job),
    onAbandoned: async () => 'retry',
    ...extra,
  };
}

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The jobs of `kind` as a worker that claimed them and died leaves them: running, lease run out. */
const abandonAll = (kind: string) =>
  t.database.db
    .updateTable('outbox')
    .set({ state: 'running', attempts: 1, locked_until: sql`now() - interval '1 second'` })
    .where('kind', '=', kind)
    .execute();

const states = (kind: string) =>
  t.database.db
    .selectFrom('outbox')
    .select(['ref_id', 'state', 'attempts', 'last_error'])
    .where('kind', '=', kind)
    .execute();

describe('outbox worker', () => {
  it('runs every committed job once across two workers and records the outcome', async () => {
    const seen: string[] = [];
    const h = handler('count', (job) => {
      seen.push(job.ref_id);
      return { done: true };
    });
    const refs = Array.from({ length: 40 }, () => newId());
    for (const ref of refs)
      await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'count', refId: ref });
    const a = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(h);
    const b = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(h);
    a.start();
    b.start();
    await until(async () => (await states('count')).every((s) => s.state === 'done'));
    await Promise.all([a.stop(), b.stop()]);
    expect(seen.sort()).toEqual([...refs].sort());
  });

  it('retries a job after the delay its handler asks for, and gives up on a final failure', async () => {
    const attempts = new Map<string, number>();
    const h = handler('flaky', (job) => {
      const n = (attempts.get(job.ref_id) ?? 0) + 1;
      attempts.set(job.ref_id, n);
      if (job.ref_id.endsWith('0')) return { failed: 'final' };
      return n < 3 ? { retryInSeconds: 0, error: `try ${n}` } : { done: true };
    });
    const ok = newId().slice(0, -1) + '1';
    const bad = newId().slice(0, -1) + '0';
    for (const ref of [ok, bad])
      await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'flaky', refId: ref });
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(h);
    w.start();
    await until(async () => (await states('flaky')).every((s) => s.state === 'done' || s.state === 'failed'));
    await w.stop();
    const rows = await states('flaky');
    expect(rows.find((r) => r.ref_id === ok)).toMatchObject({ state: 'done', attempts: 3 });
    expect(rows.find((r) => r.ref_id === bad)).toMatchObject({ state: 'failed', attempts: 1, last_error: 'final' });
  });

  it('runs a waiting job again at once when woken while it was running, not after its delay', async () => {
    const ref = newId();
    let tries = 0;
    const h = handler('waiter', async (job) => {
      tries += 1;
      // What it waits for arrives while it runs, after it looked: the other job wakes it then.
      if (tries === 1) {
        await outboxRepository.runNow(t.database.db, job.business_id, 'waiter', job.ref_id);
        return { retryInSeconds: 3600, error: 'waiting' };
      }
      return { done: true };
    });
    await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'waiter', refId: ref });
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(h);
    w.start();
    await until(async () => (await states('waiter')).every((s) => s.state === 'done'));
    await w.stop();
    expect(tries).toBe(2);
  });

  it('hands a job abandoned by a stopped worker to its handler rule', async () => {
    const retried = newId();
    const givenUp = newId();
    for (const ref of [retried, givenUp])
      await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'crash', refId: ref });
    await abandonAll('crash');
    const ran: string[] = [];
    const h = handler(
      'crash',
      (job) => {
        ran.push(job.ref_id);
        return { done: true };
      },
      { onAbandoned: async (job) => (job.ref_id === retried ? 'retry' : 'give_up') },
    );
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20, sweepMs: 50 }).register(h);
    w.start();
    await until(async () => (await states('crash')).every((s) => s.state === 'done' || s.state === 'failed'));
    await w.stop();
    expect(ran).toEqual([retried]);
    const rows = await states('crash');
    expect(rows.find((r) => r.ref_id === givenUp)?.state).toBe('failed');
  });

  it("commits what a handler records for an abandoned job together with the job's end, or not at all", async () => {
    const db = t.database.db;
    await enqueueJob(db, { businessId: tenant.businessId, kind: 'atomic', refId: newId() });
    await abandonAll('atomic');
    // The job's end fails (as if the process stopped between the two writes).
    await sql`create function outbox_refuse_failed() returns trigger language plpgsql as $$
      begin if new.kind = 'atomic' and new.state = 'failed' then raise exception 'refused'; end if; return new; end $$`.execute(
      db,
    );
    await sql`create trigger outbox_refuse_failed before update on outbox for each row execute function outbox_refuse_failed()`.execute(
      db,
    );
    let calls = 0;
    const h = handler('atomic', () => ({ done: true }), {
      leaseSeconds: 1,
      onAbandoned: async (job, trx) => {
        calls++;
        // What the handler records (a send's ERROR, here a job of another kind).
        await enqueueJob(trx, { businessId: job.business_id, kind: 'atomic-record', refId: job.ref_id });
        return 'give_up';
      },
    });
    const records = async () => (await states('atomic-record')).length;
    const w = new OutboxWorker(db, silent, { pollMs: 20, sweepMs: 50 }).register(h);
    w.start();
    try {
      await until(async () => calls >= 1);
      await new Promise((r) => setTimeout(r, 100));
      expect(await records()).toBe(0);
      expect(await states('atomic')).toEqual([expect.objectContaining({ state: 'running' })]);
      await sql`drop trigger outbox_refuse_failed on outbox`.execute(db);
      await until(async () => (await states('atomic'))[0].state === 'failed');
    } finally {
      await w.stop();
      await sql`drop function if exists outbox_refuse_failed() cascade`.execute(db);
    }
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(await records()).toBe(1);
  });

  it('takes over an abandoned job once, and the worker that lost it changes it no more', async () => {
    const db = t.database.db;
    await enqueueJob(db, { businessId: tenant.businessId, kind: 'lost', refId: newId() });
    const [stale] = await outboxRepository.claim(db, 'lost', 1, 30);
    // Its worker stalls past its lease.
    await db
      .updateTable('outbox')
      .set({ locked_until: sql`now() - interval '1 second'` })
      .where('kind', '=', 'lost')
      .execute();
    const sweeps = await Promise.all([0, 1].map(() => outboxRepository.takeOverAbandoned(db, 'lost', 100, 30)));
    const taken = sweeps.flat();
    expect(taken).toHaveLength(1);
    expect(taken[0].attempts).toBe(stale.attempts + 1);
    // The stalled worker comes back: whatever it records is refused.
    await outboxRepository.complete(db, stale);
    await outboxRepository.fail(db, stale, 'late');
    await outboxRepository.retryAt(db, stale, 0, 'late');
    await outboxRepository.release(db, stale);
    expect(await states('lost')).toEqual([
      expect.objectContaining({ state: 'running', attempts: 2, last_error: null }),
    ]);
    await outboxRepository.release(db, taken[0]);
    expect(await states('lost')).toEqual([expect.objectContaining({ state: 'pending', attempts: 2 })]);
  });

  it('with a backlog, claims again only when several slots are free, and still runs every job once', async () => {
    const seen: string[] = [];
    let running = 0;
    let most = 0;
    const h = handler(
      'backlog',
      async (job) => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 1 + Math.random() * 10));
        seen.push(job.ref_id);
        running--;
        return { done: true };
      },
      { concurrency: 16 },
    );
    const refs = Array.from({ length: 120 }, () => newId());
    for (const ref of refs)
      await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'backlog', refId: ref });
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(h);
    w.start();
    await until(async () => (await states('backlog')).every((s) => s.state === 'done'));
    await w.stop();
    expect(seen.sort()).toEqual([...refs].sort());
    expect(most).toBeLessThanOrEqual(16);
  });

  it('leaves the job as it is when the handler says it recorded the completion itself', async () => {
    const ref = newId();
    await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'self', refId: ref });
    const h = handler('self', async (job) => {
      await t.database.db
        .updateTable('outbox')
        .set({ state: 'done', locked_until: null, last_error: 'by the handler' })
        .where('id', '=', job.id)
        .execute();
      return { done: true, recorded: true };
    });
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(h);
    w.start();
    await until(async () => (await states('self'))[0].state === 'done');
    await new Promise((r) => setTimeout(r, 100));
    await w.stop();
    // complete() would have cleared last_error.
    expect((await states('self'))[0]).toMatchObject({ state: 'done', last_error: 'by the handler' });
  });

  it('keeps a job whose handler throws, for a later try', async () => {
    await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'boom', refId: newId() });
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register(
      handler('boom', () => {
        throw new Error('bug');
      }),
    );
    w.start();
    await until(async () => (await states('boom'))[0].attempts >= 1 && (await states('boom'))[0].state === 'pending');
    await w.stop();
    expect((await states('boom'))[0]).toMatchObject({ state: 'pending', last_error: 'bug' });
  });

  it('tells a long job that the worker stops; one that ends part way is due again at once, with no failure', async () => {
    await enqueueJob(t.database.db, { businessId: tenant.businessId, kind: 'long', refId: newId() });
    let steps = 0;
    const w = new OutboxWorker(t.database.db, silent, { pollMs: 20 }).register({
      ...handler('long', () => ({ done: true })),
      handle: async (_job, stopping) => {
        while (!stopping?.aborted) {
          steps++;
          await new Promise((r) => setTimeout(r, 5));
        }
        return { interrupted: true };
      },
    });
    w.start();
    await until(async () => steps > 2);
    const started = Date.now();
    await w.stop();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await states('long')).toEqual([
      expect.objectContaining({ state: 'pending', attempts: 1, last_error: null }),
    ]);
    const [job] = await t.database.db.selectFrom('outbox').select('run_at').where('kind', '=', 'long').execute();
    const { rows } = await sql<{ due: boolean }>`select ${job.run_at}::timestamptz <= now() as due`.execute(
      t.database.db,
    );
    expect(rows[0].due).toBe(true);
  });

  it('renews the lease of a job under the claim it was read with, and not after a take-over', async () => {
    const db = t.database.db;
    await enqueueJob(db, { businessId: tenant.businessId, kind: 'renewed', refId: newId() });
    const [job] = await outboxRepository.claim(db, 'renewed', 1, 1);
    expect(await outboxRepository.extendLease(db, job, 600)).toBe(true);
    const lease = async () => {
      const { rows } = await sql<{ left: number }>`
        select extract(epoch from locked_until - now())::float8 as left from outbox where kind = 'renewed'`.execute(db);
      return rows[0].left;
    };
    expect(await lease()).toBeGreaterThan(500);
    await db
      .updateTable('outbox')
      .set({ locked_until: sql`now() - interval '1 second'` })
      .where('kind', '=', 'renewed')
      .execute();
    const [taken] = await outboxRepository.takeOverAbandoned(db, 'renewed', 1, 30);
    expect(await outboxRepository.extendLease(db, job, 600)).toBe(false);
    expect(await lease()).toBeLessThan(31);
    await outboxRepository.complete(db, taken);
  });

  it('keeps one waiting timer job per record and kind, moved later, sooner, or left as it is', async () => {
    const db = t.database.db;
    const [a, b] = [newId(), newId()];
    const job = (refId: string, delaySeconds: number) => [{ businessId: tenant.businessId, refId, delaySeconds }];
    const dueIn = async (kind: string, refId: string) => {
      const { rows } = await sql<{ due: number }>`
        select extract(epoch from run_at - now())::float8 as due from outbox
        where business_id = ${tenant.businessId} and kind = ${kind} and ref_id = ${refId} and state = 'pending'`.execute(
        db,
      );
      return rows.map((r) => Math.round(r.due));
    };
    await scheduleJobs(db, 'ai_follow_up', job(a, 60));
    await scheduleJobs(db, 'ai_follow_up', job(a, 600));
    await scheduleJobs(db, 'ai_follow_up', job(a, 30));
    expect(await dueIn('ai_follow_up', a)).toEqual([600]);
    await scheduleJobs(db, 'ai_follow_up', job(a, 45), 'earliest');
    expect(await dueIn('ai_follow_up', a)).toEqual([45]);
    await scheduleJobs(db, 'ai_follow_up', job(a, 900), 'existing');
    expect(await dueIn('ai_follow_up', a)).toEqual([45]);
    // Another kind, or another record, waits beside it.
    await scheduleJobs(db, 'ai_inactivity', job(a, 120));
    await scheduleJobs(db, 'ai_follow_up', job(b, 120));
    expect([await dueIn('ai_inactivity', a), await dueIn('ai_follow_up', b)]).toEqual([[120], [120]]);
    // A running job is not waiting: a new one waits beside it.
    await db
      .updateTable('outbox')
      .set({ state: 'running' })
      .where('kind', '=', 'ai_follow_up')
      .where('ref_id', '=', a)
      .execute();
    await scheduleJobs(db, 'ai_follow_up', job(a, 60));
    expect(await dueIn('ai_follow_up', a)).toEqual([60]);
  });
});
