import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pino from 'pino';
import { Agent, buildConnector } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { OutboxWorker } from '../../../src/jobs/outbox.worker.ts';
import { SecretBox } from '../../../src/lib/secret-box.ts';
import { ChannelsService } from '../../../src/modules/channels/channels.service.ts';
import type { DomainEvent } from '../../../src/modules/domain-events/domain-events.types.ts';
import { OUTCOME_UNKNOWN, SendJobHandler } from '../../../src/modules/sending/send.job.ts';
import type { FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import {
  createChannel,
  inboundContact,
  messageRow,
  settled,
  until,
  type TestChannel,
  withSendingChannel,
} from './sending.fixtures.ts';

// When a send counts as started: only once its request is about to be written to the provider.
// Before that (a connection being opened, a provider out of reach) it provably never left, so it is
// retried, and while it is retried its status says why and how many attempts it took.

let t: TestApp;
let fake: FakeGraphApi;
let tenant: Tenant;
let channel: TestChannel;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ t, fake, tenant, channel, close } = await withSendingChannel());
});
afterAll(() => close());
beforeEach(() => fake.reset());

const silent = { error: () => undefined };
const sendsTo = (phone: string) => fake.sends().filter((r) => (r.body as { to?: string }).to === phone);
const send = (app: FastifyInstance, to: string, channelId = channel.id) =>
  app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers: tenant.headers,
    payload: { to, from: 'whatsapp', type: 'text', content: { text: 'hi' }, channel_uuid: channelId },
  });
const statusOf = async (id: string) =>
  (await t.app.inject({ method: 'GET', url: `/external/v2/messages/status/${id}`, headers: tenant.headers })).json()
    .message as { status: string; error: string | null; attempts: number };
/** The send job's lease runs out, as when the process holding it died. */
const leaseRunsOut = (id: string) =>
  t.database.db
    .updateTable('outbox')
    .set({ locked_until: sql<string>`now() - interval '1 second'` })
    .where('ref_id', '=', id)
    .execute();

/** An undici agent on the real network whose connections wait for `open()` before they are made. */
function stalledConnections() {
  const connect = buildConnector({});
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  let attempts = 0;
  const agent = new Agent({
    connect: (options, callback) => {
      attempts++;
      void opened.then(() => connect(options, callback));
    },
  });
  return { agent, open, attempts: () => attempts };
}

describe('a send counts as started only when its request is written', () => {
  it('sends again, once, a message whose process stopped while it was still connecting', async () => {
    await t.app.worker.stop();
    const stalled = stalledConnections();
    // A process whose connections to the provider hang (a slow name server, a lost SYN).
    const channels = new ChannelsService(
      t.database.db,
      new SecretBox(t.config.secretKeys, 'channel-secrets'),
      { allowPrivate: true },
      { dispatcher: stalled.agent },
    );
    const stuck = new OutboxWorker(t.database.db, silent, { pollMs: 20, sweepMs: 60_000 }).register(
      new SendJobHandler({ db: t.database.db, channels }),
    );
    try {
      const { phone } = await inboundContact(t, tenant, channel, 1);
      const id = (await send(t.app, phone)).json().message.uuid as string;
      stuck.start();
      await until(() => stalled.attempts() === 1);
      // Nothing of the request has left: the call is not marked as started.
      expect(await messageRow(t, id)).toMatchObject({ status: 'PENDING', provider_call_at: null, send_attempts: 0 });

      // That process dies (it claims nothing more; its call stays stuck); another takes the job over
      // and sends the message.
      const dead = stuck.stop();
      await leaseRunsOut(id);
      t.app.worker.start();
      expect(await settled(t, id)).toMatchObject({ status: 'SENT', send_attempts: 1, error: null });
      expect(sendsTo(phone)).toHaveLength(1);

      // Should the first process come back and connect, it writes nothing.
      stalled.open();
      await dead;
      expect(sendsTo(phone)).toHaveLength(1);
      expect((await messageRow(t, id)).status).toBe('SENT');
    } finally {
      stalled.open();
      await stuck.stop();
      await stalled.agent.close();
      t.app.worker.start();
    }
  });
});

/** A port on loopback that refuses connections until `listen()` forwards them to the fake Graph API. */
async function unreachableProvider() {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const sockets = new Set<Socket>();
  let forwarder: Server | undefined;
  return {
    baseUrl: `http://127.0.0.1:${port}${new URL(fake.baseUrl).pathname}`,
    async listen() {
      const target = new URL(fake.origin);
      forwarder = createServer((client) => {
        const upstream = new Socket();
        sockets.add(client).add(upstream);
        upstream.connect(Number(target.port), target.hostname);
        client.pipe(upstream).pipe(client);
        client.on('error', () => upstream.destroy());
        upstream.on('error', () => client.destroy());
      });
      await new Promise<void>((resolve) => forwarder!.listen(port, '127.0.0.1', resolve));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      if (forwarder) await new Promise((resolve) => forwarder!.close(resolve));
    },
  };
}

describe('a failing send is visible', () => {
  it('shows the last error and the attempts while it is retried, and logs the channel failing once, then recovering', async () => {
    const provider = await unreachableProvider();
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    await t.app.worker.stop();
    const unreachable = await createChannel(t.app, tenant, { ...fake, baseUrl: provider.baseUrl });
    // A process that logs at the default level.
    const app = await buildApp(t.config, { database: t.database, loggerInstance: logger });
    await app.ready();
    try {
      const first = await inboundContact(t, tenant, unreachable, 1);
      const second = await inboundContact(t, tenant, unreachable, 1);
      const ids = [
        (await send(app, first.phone, unreachable.id)).json().message.uuid as string,
        (await send(app, second.phone, unreachable.id)).json().message.uuid as string,
      ];
      // Retried with backoff from 1 s: two attempts each within a few seconds.
      for (const id of ids) await until(async () => (await messageRow(t, id)).send_attempts >= 2, 20_000);
      for (const id of ids) {
        const status = await statusOf(id);
        expect(status.status).toBe('enqueued');
        expect(status.error).toMatch(/^network_error: provider unreachable: .*ECONNREFUSED/);
        expect(status.attempts).toBeGreaterThanOrEqual(2);
        // It never reached the provider: nothing marks it as started.
        expect((await messageRow(t, id)).provider_call_at).toBeNull();
      }
      const about = (msg: RegExp) =>
        lines.filter((l) => l.channelId === unreachable.id && typeof l.msg === 'string' && msg.test(l.msg));
      // One warning for the channel, however many attempts failed.
      expect(about(/failing/)).toHaveLength(1);
      expect(about(/failing/)[0]).toMatchObject({
        level: 40,
        businessId: tenant.businessId,
        code: 'network_error',
        error: expect.stringMatching(/ECONNREFUSED/),
      });

      await provider.listen();
      for (const id of ids) expect(await settled(t, id, 20_000)).toMatchObject({ status: 'SENT', error: null });
      for (const id of ids) expect(await statusOf(id)).toMatchObject({ status: 'sent', error: null });
      expect(sendsTo(first.phone)).toHaveLength(1);
      expect(sendsTo(second.phone)).toHaveLength(1);
      expect(about(/failing/)).toHaveLength(1);
      expect(about(/go through again/)).toEqual([
        expect.objectContaining({ level: 30, failedAttempts: expect.any(Number) }),
      ]);
      // No line carries the channel's secrets.
      const logged = JSON.stringify(lines);
      expect(logged).not.toContain(fake.accessToken);
      expect(logged).not.toContain('app-secret');
    } finally {
      await app.close();
      await provider.close();
      t.app.worker.start();
    }
  });
});

describe('status moves of the send job', () => {
  it('write message_status_changed in their commit, which subscribers receive', async () => {
    const received: DomainEvent[] = [];
    await t.app.services.domainEvents.register({
      name: 'test-status-moves',
      types: ['message_status_changed'],
      handle: async (events) => void received.push(...events),
    });
    const moves = (id: string) =>
      t.database.db
        .selectFrom('domain_events')
        .select(['type', 'conversation_id', 'data'])
        .where('subject_id', '=', id)
        .where('type', '=', 'message_status_changed')
        .orderBy('id')
        .execute();

    // Accepted by the provider.
    const a = await inboundContact(t, tenant, channel, 1);
    const sent = (await send(t.app, a.phone)).json().message.uuid as string;
    expect((await settled(t, sent)).status).toBe('SENT');
    expect(await moves(sent)).toEqual([
      {
        type: 'message_status_changed',
        conversation_id: a.conversation.id,
        data: { contact_id: a.contact.id, direction: 'outbound', sender_type: 'api', status: 'SENT' },
      },
    ]);

    // Refused for good by the provider.
    const b = await inboundContact(t, tenant, channel, 1);
    fake.failNextSends(1, { status: 400, code: 131026, message: '(#131026) Message undeliverable' });
    const refused = (await send(t.app, b.phone)).json().message.uuid as string;
    expect((await settled(t, refused)).status).toBe('ERROR');
    expect((await moves(refused)).map((e) => e.data.status)).toEqual(['ERROR']);

    // Given up by the process that takes over a call whose outcome is unknown.
    const c = await inboundContact(t, tenant, channel, 1);
    fake.setDelay(2_000);
    let unknown = '';
    let restarted: FastifyInstance | undefined;
    try {
      unknown = (await send(t.app, c.phone)).json().message.uuid as string;
      await until(() => sendsTo(c.phone).length === 1);
      await leaseRunsOut(unknown);
      restarted = await buildApp(t.config, { database: t.database, logger: false });
      await restarted.ready();
      expect(await settled(t, unknown)).toMatchObject({ status: 'ERROR', error: OUTCOME_UNKNOWN });
      // The first call's late answer moves nothing.
      await until(
        async () =>
          (
            await t.database.db
              .selectFrom('outbox')
              .select('state')
              .where('ref_id', '=', unknown)
              .executeTakeFirstOrThrow()
          ).state === 'failed',
      );
      await new Promise((resolve) => setTimeout(resolve, 2_500));
    } finally {
      fake.setDelay(0);
      await restarted?.close();
    }
    expect((await moves(unknown)).map((e) => e.data.status)).toEqual(['ERROR']);

    // A retried attempt moves nothing; every move reaches the subscriber.
    await until(() => received.filter((e) => [sent, refused, unknown].includes(e.subjectId)).length === 3);
    expect(
      received.filter((e) => [sent, refused, unknown].includes(e.subjectId)).map((e) => [e.subjectId, e.data.status]),
    ).toEqual([
      [sent, 'SENT'],
      [refused, 'ERROR'],
      [unknown, 'ERROR'],
    ]);
  });
});
