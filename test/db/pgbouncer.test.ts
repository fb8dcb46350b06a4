import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { enqueueJob, OutboxWorker, type JobHandler } from '../../src/jobs/outbox.worker.ts';
import { WorkerSession } from '../../src/jobs/worker-session.ts';
import { newId } from '../../src/lib/ids.ts';
import { databaseUrlOf } from '../global-setup.ts';
import { inboundMessage, metaNotification, startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { startPgBouncer, pgbouncerInstalled, type TestPgBouncer } from '../helpers/pgbouncer.ts';
import { adminHeaders, createTenant, type Tenant } from '../helpers/tenants.ts';
import { engine, testConfig } from '../helpers/test-app.ts';
import { createUser, signIn } from '../modules/dashboard-auth/dashboard-helpers.ts';
import { postSigned } from '../modules/inbound/whatsapp-helpers.ts';
import { eventually, openSse, type SseClient } from '../modules/live/live-helpers.ts';
import { createChannel, newPhone, until, type TestChannel } from '../modules/sending/sending.fixtures.ts';
import { Receiver } from '../modules/webhooks/webhook-harness.ts';

// The service as production often runs it: every pooled query through PgBouncer in transaction mode,
// three server connections shared by two server processes, and a direct connection for what needs a
// session (the migrations, LISTEN, the worker session's lock). The server connections start in
// another time zone than UTC, as on a server configured for local time.

const PASSWORD = 'correct horse battery staple';
const silent = { error: () => undefined };

let name: string;
let directUrl: string;
let bouncer: TestPgBouncer;
let fake: FakeGraphApi;
let receiver: Receiver;
const opened: DatabaseHandle[] = [];

/** The server's own connection, outside the database under test, for creating and dropping it. */
async function onServer(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/** A process's database as the service opens it behind PgBouncer (DATABASE_URL, DATABASE_DIRECT_URL). */
async function open(poolSize = 10): Promise<DatabaseHandle> {
  const database = await openDatabase({ databaseUrl: bouncer.url, directUrl, namedStatements: false, poolSize });
  opened.push(database);
  return database;
}

const runs = engine === 'postgres' && pgbouncerInstalled;

beforeAll(async () => {
  if (!runs) return;
  name = `pgbouncer_${randomBytes(6).toString('hex')}`;
  // An empty database, not a copy of the migrated one: the migrations run here, on the direct URL.
  await onServer(`CREATE DATABASE "${name}"`);
  directUrl = databaseUrlOf(process.env.TEST_DATABASE_URL!, name);
  bouncer = await startPgBouncer(directUrl, { poolSize: 3, timeZone: 'Pacific/Chatham' });
  fake = await startFakeGraphApi();
  receiver = await Receiver.start();
});
afterAll(async () => {
  if (!runs) return;
  for (const database of opened) await database.close();
  await bouncer?.close();
  await fake?.close();
  await receiver?.close();
  await onServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
});

describe.runIf(runs)('behind PgBouncer in transaction mode', () => {
  it('migrates over the direct connection, and leaves no lock held', async () => {
    const database = await open(2);
    const applied = await database.direct((db) => migrateToLatest(db));
    expect(applied.length).toBeGreaterThan(30);
    expect(await database.direct((db) => migrateToLatest(db))).toEqual([]);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_locks
      where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`.execute(
      database.db,
    );
    expect(rows[0].n).toBe(0);
  });

  describe('two server processes', () => {
    const apps: FastifyInstance[] = [];
    let tenant: Tenant;
    let channel: TestChannel;
    let stream: SseClient;

    beforeAll(async () => {
      const config = testConfig({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
      for (let i = 0; i < 2; i++) {
        const app = await buildApp(config, { database: await open(), logger: false });
        await app.ready();
        apps.push(app);
      }
      const [a, b] = apps;
      tenant = await createTenant(a);
      channel = await createChannel(a, tenant, fake);
      const hook = await a.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
        headers: adminHeaders,
        payload: { event: 'message_created', url: `${receiver.url}/hooks` },
      });
      expect(hook.statusCode).toBe(201);
      await createUser(a, tenant.businessId, { email: 'ana@a.test', password: PASSWORD });
      // The dashboard's stream is served by the other process, which hears the first's NOTIFY.
      await b.listen({ host: '127.0.0.1', port: 0 });
      const browser = await signIn(a, 'ana@a.test', PASSWORD);
      stream = await openSse(`http://127.0.0.1:${(b.server.address() as AddressInfo).port}/dashboard/api/live`, {
        cookie: `session=${browser.token}`,
      });
      expect(stream.status, stream.body).toBe(200);
      expect(await eventually(() => stream.named('ready').length > 0, 5_000)).toBe(true);
    });
    afterAll(async () => {
      // The server ends the stream as it closes; a stream the client dropped first kept its socket
      // open for seconds.
      for (const app of apps) await app.close();
      stream?.close();
    });

    it('receives, sends, calls webhooks and streams live, many requests at once over three server connections', async () => {
      const [a, b] = apps;
      const phones = Array.from({ length: 12 }, () => newPhone());
      // Inbound messages, half through each process, all at once.
      const inbound = await Promise.all(
        phones.map((phone, i) =>
          postSigned(
            apps[i % 2],
            metaNotification({
              phoneNumberId: channel.phoneNumberId,
              displayPhoneNumber: channel.identifier,
              messages: [inboundMessage(phone, 'text', { body: `hello ${i}` })],
            }),
            // createChannel's app secret.
            'app-secret',
          ),
        ),
      );
      expect(inbound.map((r) => r.statusCode)).toEqual(phones.map(() => 200));
      const created = () => stream.events().filter((e) => e.type === 'message_created');
      expect(await eventually(() => created().length >= phones.length, 5_000)).toBe(true);

      // Replies, half through each process: the outbox workers of both claim them through the pool.
      const sends = await Promise.all(
        phones.map((phone, i) =>
          apps[i % 2].inject({
            method: 'POST',
            url: '/external/v2/messages/send',
            headers: tenant.headers,
            payload: {
              to: phone,
              from: 'whatsapp',
              type: 'text',
              content: { text: `reply ${i}` },
              channel_uuid: channel.id,
            },
          }),
        ),
      );
      expect(sends.map((r) => r.statusCode)).toEqual(phones.map(() => 200));
      // The two pools' clients shared PgBouncer's three server connections; the others are the
      // processes' direct ones (LISTEN and the worker session, each).
      const backends = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend'`.execute(opened[0].db);
      expect(backends.rows[0].n).toBeLessThanOrEqual(3 + 2 * 2);
      await until(() => fake.sends().length >= phones.length, 10_000);
      expect(
        fake
          .sends()
          .map((s) => (s.body as { to: string }).to)
          .sort(),
      ).toEqual([...phones].sort());
      for (const res of sends) {
        const uuid = res.json().message.uuid as string;
        await until(async () => {
          const status = await b.inject({ url: `/external/v2/messages/status/${uuid}`, headers: tenant.headers });
          return status.json().message.status === 'sent';
        }, 10_000);
      }

      // Each received and each sent message called the business's webhook once.
      await receiver.waitFor(2 * phones.length);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(receiver.calls).toHaveLength(2 * phones.length);
      expect(await eventually(() => created().length >= 2 * phones.length, 5_000)).toBe(true);

      // Times come back in UTC although the server connections start in another time zone.
      const conversation = await a.inject({
        url: `/external/v2/conversations?phone=${phones[0]}`,
        headers: tenant.headers,
      });
      expect(conversation.statusCode).toBe(200);
      expect(JSON.stringify(conversation.json())).toMatch(/"created_at":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z"/);
      expect(bouncer.log()).not.toMatch(/unsupported startup parameter|prepared statement/);
    });
  });

  it('takes over at once the jobs of a process whose worker session ended', async () => {
    const [first, second] = [await open(3), await open(3)];
    const tenant = await first.db
      .insertInto('businesses')
      .values({ id: newId(), name: 'Jobs' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const kind = `held-${newId()}`;
    const held: JobHandler = {
      kind,
      concurrency: 10,
      leaseSeconds: 120,
      // The work never ends in the process that dies.
      handle: () => new Promise(() => {}),
      onAbandoned: async () => 'retry',
    };
    const refs = Array.from({ length: 4 }, () => newId());
    for (const refId of refs) await enqueueJob(first.db, { businessId: tenant.id, kind, refId });
    const jobs = () =>
      first.db.selectFrom('outbox').select(['state', 'attempts', 'locked_by']).where('kind', '=', kind).execute();

    const doomedSession = new WorkerSession({ connect: first.connect!, retryMs: 60_000 });
    await doomedSession.start();
    const doomed = new OutboxWorker(first.db, silent, { pollMs: 20, session: doomedSession }).register(held);
    doomed.start();
    await until(async () => (await jobs()).every((j) => j.state === 'running'));
    // Claimed through the pool under the session the process holds on its direct connection.
    expect((await jobs()).map((j) => j.locked_by)).toEqual(refs.map(() => doomedSession.id()));

    const survivorSession = new WorkerSession({ connect: second.connect!, retryMs: 60_000 });
    await survivorSession.start();
    const done: string[] = [];
    const survivor = new OutboxWorker(second.db, silent, {
      pollMs: 20,
      sweepMs: 100,
      session: survivorSession,
    }).register({
      ...held,
      handle: async (job) => {
        done.push(job.ref_id);
        return { done: true };
      },
    });
    survivor.start();
    try {
      // A live owner keeps its jobs.
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(done).toEqual([]);
      void doomed.stop();
      await sql`select pg_terminate_backend(${doomedSession.id()!})`.execute(second.db);
      await until(async () => (await jobs()).every((j) => j.state === 'done'), 10_000);
      expect(done.sort()).toEqual([...refs].sort());
    } finally {
      await survivor.stop();
      await survivorSession.stop();
      await doomedSession.stop();
    }
  });
});
