import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { enqueueJob, OutboxWorker, type JobHandler } from '../../src/jobs/outbox.worker.ts';
import { WorkerSession } from '../../src/jobs/worker-session.ts';
import { newId } from '../../src/lib/ids.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';
import { createChannel, inboundContact, until } from '../modules/sending/sending.fixtures.ts';

// On PostgreSQL several processes share the jobs. One that dies (kill -9) leaves its jobs running
// under a two-minute lease; its worker session's lock ends with it, so the others take them over at
// once: a send that never reached the provider is sent, one that may have is given up, unknown.

let t: TestApp;
let tenant: Tenant;
const silent = { error: () => undefined };

beforeAll(async () => {
  if (engine !== 'postgres') return;
  // The fake Graph API listens on loopback.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: false });
  tenant = await createTenant(t.app);
});
afterAll(() => t?.close());

/** Another process's connections to the same database: its own pool and worker session. */
async function otherProcess(): Promise<{ database: DatabaseHandle; session: WorkerSession }> {
  const database = await openDatabase({ ...t.postgres!, poolSize: 3 });
  const session = new WorkerSession({ connect: database.connect!, retryMs: 60_000 });
  await session.start();
  return { database, session };
}

const jobsOf = (kind: string) =>
  t.database.db
    .selectFrom('outbox')
    .select(['ref_id', 'state', 'attempts', 'locked_by'])
    .where('kind', '=', kind)
    .orderBy('ref_id')
    .execute();

describe.runIf(engine === 'postgres')('worker sessions on PostgreSQL', () => {
  it('takes over at once the jobs of a process whose session ended, never those of a live one', async () => {
    const kind = `held-${newId()}`;
    const held: JobHandler = {
      kind,
      concurrency: 10,
      leaseSeconds: 120,
      // The work never ends in the process that dies.
      handle: () => new Promise(() => {}),
      onAbandoned: async () => 'retry',
    };
    const refs = Array.from({ length: 5 }, () => newId());
    for (const refId of refs) await enqueueJob(t.database.db, { businessId: tenant.businessId, kind, refId });

    const a = await otherProcess();
    const doomed = new OutboxWorker(a.database.db, silent, { pollMs: 20, session: a.session }).register(held);
    doomed.start();
    await until(async () => (await jobsOf(kind)).every((j) => j.state === 'running'));
    expect((await jobsOf(kind)).map((j) => j.locked_by)).toEqual(refs.map(() => a.session.id()));

    const b = new WorkerSession({ connect: t.database.connect!, retryMs: 60_000 });
    await b.start();
    const done: string[] = [];
    const survivor = new OutboxWorker(t.database.db, silent, { pollMs: 20, sweepMs: 100, session: b }).register({
      ...held,
      handle: async (job) => {
        done.push(job.ref_id);
        return { done: true };
      },
    });
    survivor.start();
    try {
      // A live owner keeps its jobs, however many sweeps pass.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(done).toEqual([]);

      // The process is killed: the server ends its sessions (as it does when the socket closes).
      void doomed.stop();
      const killed = Date.now();
      await t.database.db
        .selectNoFrom(sql<boolean>`pg_terminate_backend(${a.session.id()!})`.as('ok'))
        .executeTakeFirstOrThrow();
      await until(async () => (await jobsOf(kind)).every((j) => j.state === 'done'), 10_000);
      // Well within the two-minute lease: a few sweeps.
      expect(Date.now() - killed).toBeLessThan(10_000);
      expect(done.sort()).toEqual([...refs].sort());
      // Each taken over once: the dead process's claim, the take-over's, and the survivor's new claim.
      expect((await jobsOf(kind)).map((j) => j.attempts)).toEqual(refs.map(() => 3));
    } finally {
      await survivor.stop();
      await b.stop();
      await a.session.stop();
      await a.database.close();
    }
  });

  describe('kill -9 during sends', () => {
    let fake: FakeGraphApi;
    let child: ChildProcess | undefined;
    let survivor: FastifyInstance | undefined;
    beforeAll(async () => {
      fake = await startFakeGraphApi();
    });
    afterAll(async () => {
      child?.kill('SIGKILL');
      await survivor?.close();
      await fake.close();
    });

    it('sends once what never reached the provider, gives up what may have, long before the lease ends', async () => {
      // Two calls a second; the provider takes its time to answer, so a killed process leaves calls in flight.
      const channel = await createChannel(t.app, tenant, fake, { pace_per_second: 2 });
      fake.setDelay(60_000);
      const phones: string[] = [];
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const { phone } = await inboundContact(t, tenant, channel, 1);
        const res = await t.app.inject({
          method: 'POST',
          url: '/external/v2/messages/send',
          headers: tenant.headers,
          payload: { to: phone, from: 'whatsapp', type: 'text', content: { text: `n${i}` }, channel_uuid: channel.id },
        });
        phones.push(phone);
        ids.push(res.json().message.uuid as string);
      }

      child = spawn(process.execPath, ['--import', 'tsx', 'test/jobs/worker.process.ts'], {
        env: { ...process.env, WORKER_DATABASE_URL: t.postgres!.databaseUrl, WORKER_SCHEMA: t.postgres!.schema ?? '' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await until(() => output.includes('ready'), 60_000);

      // Kill it with calls written to the provider and a claimed send that has not started its call.
      const inHand = () =>
        t.database.db
          .selectFrom('outbox as o')
          .innerJoin('messages as m', (join) =>
            join.onRef('m.business_id', '=', 'o.business_id').onRef('m.id', '=', 'o.ref_id'),
          )
          .select(['m.id', 'm.provider_call_at'])
          .where('o.state', '=', 'running')
          .where('m.id', 'in', ids)
          .execute();
      await until(
        async () => fake.sends().length >= 2 && (await inHand()).some((m) => m.provider_call_at === null),
        30_000,
      );
      child.kill('SIGKILL');
      await once(child, 'exit');
      child = undefined;
      const killed = Date.now();
      // What it wrote before it died has arrived.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const reached = new Set(fake.sends().map((r) => (r.body as { to: string }).to));
      // The calls it had recorded as started (written, or about to be), and the sends it held that had not.
      const started = new Set(
        (
          await t.database.db
            .selectFrom('messages')
            .select('id')
            .where('id', 'in', ids)
            .where('provider_call_at', 'is not', null)
            .execute()
        ).map((m) => m.id),
      );
      const notStarted = (await inHand()).filter((m) => m.provider_call_at === null).map((m) => m.id);
      expect(notStarted.length).toBeGreaterThan(0);

      fake.setDelay(0);
      survivor = await buildApp(t.config, { database: t.database, logger: false });
      await survivor.ready();
      const rows = () =>
        t.database.db.selectFrom('messages').select(['id', 'status', 'error']).where('id', 'in', ids).execute();
      await until(async () => (await rows()).every((r) => r.status !== 'PENDING'), 60_000);
      // Well within the two-minute lease of the jobs it held.
      expect(Date.now() - killed).toBeLessThan(60_000);

      const byId = new Map((await rows()).map((r) => [r.id, r]));
      for (const [i, id] of ids.entries()) {
        const requests = fake.sends().filter((r) => (r.body as { to: string }).to === phones[i]);
        const row = byId.get(id)!;
        // Never sent twice; nothing reached the provider without its start recorded first.
        expect(requests.length, phones[i]).toBeLessThanOrEqual(1);
        if (reached.has(phones[i])) expect(started.has(id), phones[i]).toBe(true);
        if (started.has(id)) {
          // The provider may have it: never sent again.
          expect(row, phones[i]).toMatchObject({ status: 'ERROR', error: expect.stringMatching(/^outcome unknown/) });
        } else {
          // It never left, though in the dead process's hands or waiting: sent, once.
          expect(row.status, `${phones[i]}: ${row.error}`).toBe('SENT');
          expect(requests).toHaveLength(1);
        }
      }
      for (const id of notStarted) expect(byId.get(id)!.status).toBe('SENT');
      expect(reached.size).toBeGreaterThanOrEqual(2);
    }, 150_000);
  });
});
