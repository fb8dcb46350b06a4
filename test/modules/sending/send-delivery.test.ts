import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { OutboxWorker } from '../../../src/jobs/outbox.worker.ts';
import { ChannelPacer } from '../../../src/modules/sending/channel-pacer.ts';
import { OUTCOME_UNKNOWN, SendJobHandler } from '../../../src/modules/sending/send.job.ts';
import {
  metaNotification,
  signedNotification,
  statusReceipt,
  type FakeGraphApi,
  type GraphFailure,
} from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import { engine, type TestApp } from '../../helpers/test-app.ts';
import {
  createChannel,
  inboundContact,
  messageRow,
  settled,
  until,
  type TestChannel,
  withSendingChannel,
} from './sending.fixtures.ts';

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

const sendsTo = (phone: string) => fake.sends().filter((r) => (r.body as { to?: string }).to === phone);
const send = (app: FastifyInstance, to: string, channelId = channel.id) =>
  app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers: tenant.headers,
    payload: { to, from: 'whatsapp', type: 'text', content: { text: 'hi' }, channel_uuid: channelId },
  });
const outbox = (messageId: string) =>
  t.database.db.selectFrom('outbox').selectAll().where('ref_id', '=', messageId).executeTakeFirstOrThrow();
/** A message and its send job as one statement sees them (one snapshot). */
const messageAndJob = (messageId: string) =>
  t.database.db
    .selectFrom('messages as m')
    .innerJoin('outbox as o', (join) =>
      join.onRef('o.business_id', '=', 'm.business_id').onRef('o.ref_id', '=', 'm.id'),
    )
    .select(['m.status', 'm.error', 'o.state', 'o.last_error', 'o.locked_until'])
    .where('m.id', '=', messageId)
    .executeTakeFirstOrThrow();

/** Another app over the same database, as a restarted process would be. */
async function secondApp(workers: boolean): Promise<FastifyInstance> {
  const app = await buildApp(t.config, { database: t.database, logger: false, workers });
  await app.ready();
  return app;
}

describe('send worker: provider failures', () => {
  it.each<[string, GraphFailure]>([
    ['130429 throughput', { status: 400, code: 130429, message: '(#130429) Rate limit hit' }],
    [
      '131056 pair rate',
      { status: 400, code: 131056, message: '(#131056) (Business Account, Consumer Account) pair rate limit hit' },
    ],
    ['a 500', { status: 500, code: 999999, message: 'Internal server error' }],
  ])('retries %s with backoff, then records SENT', async (_name, failure) => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    fake.failNextSends(1, failure);
    const id = (await send(t.app, phone)).json().message.uuid as string;
    let waiting = await messageAndJob(id);
    await until(async () => (waiting = await messageAndJob(id)).error !== null);
    // The message waits for its next attempt in the commit that puts its job back in the queue.
    expect(waiting).toMatchObject({
      status: 'PENDING',
      state: 'pending',
      last_error: waiting.error,
      locked_until: null,
    });
    expect(waiting.error).toContain(String(failure.code));
    const row = await settled(t, id);
    expect(row).toMatchObject({ status: 'SENT', send_attempts: 2, error: null });
    expect(sendsTo(phone)).toHaveLength(2);
    // The job is completed by the statement that marks the message SENT.
    expect(await outbox(id)).toMatchObject({ state: 'done', locked_until: null });
  });

  // Another connection holds the job's row while the provider answers, so the worker's end of the
  // job must wait: a reader sees neither the ERROR mark nor the job's end until both commit. Only
  // PostgreSQL has another connection to hold it with.
  it.runIf(engine === 'postgres')(
    'marks a failed send ERROR in the commit that ends its job, never before',
    async () => {
      const { phone } = await inboundContact(t, tenant, channel, 1);
      fake.failNextSends(1, { status: 400, code: 131026, message: '(#131026) Message undeliverable' });
      fake.setDelay(300);
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      let holding: Promise<void> | undefined;
      try {
        const id = (await send(t.app, phone)).json().message.uuid as string;
        await until(() => sendsTo(phone).length === 1);
        let held = () => {};
        const locked = new Promise<void>((resolve) => (held = resolve));
        holding = t.database.db.transaction().execute(async (trx) => {
          await trx.selectFrom('outbox').select('id').where('ref_id', '=', id).forUpdate().execute();
          held();
          await released;
        });
        await locked;
        // The provider has answered and the worker has tried to record it.
        await new Promise((resolve) => setTimeout(resolve, 800));
        expect(await messageAndJob(id)).toMatchObject({ status: 'PENDING', state: 'running' });
        release();
        await holding;
        const row = await settled(t, id);
        expect(row).toMatchObject({ status: 'ERROR', error: '131026: (#131026) Message undeliverable' });
        expect(await outbox(id)).toMatchObject({ state: 'failed', last_error: row.error });
      } finally {
        release();
        await holding;
        fake.setDelay(0);
      }
    },
  );

  it('does not resend after a connection dropped during the call: the provider may have the message', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    fake.disconnectNextSends(1);
    const id = (await send(t.app, phone)).json().message.uuid as string;
    const row = await settled(t, id);
    expect(row).toMatchObject({ status: 'ERROR', send_attempts: 1, provider_message_id: null });
    expect(row.error).toMatch(/^outcome unknown: network_error: connection to the provider lost: .*; not resent$/);
    expect(sendsTo(phone)).toHaveLength(1);
    // The ERROR mark and the job's end are one commit.
    expect(await outbox(id)).toMatchObject({ state: 'failed', last_error: row.error, locked_until: null });
  });

  it('sends the message id for Meta to echo in receipts, and a receipt recovers a send whose answer was lost', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    fake.disconnectNextSends(1);
    const id = (await send(t.app, phone)).json().message.uuid as string;
    expect(await settled(t, id)).toMatchObject({ status: 'ERROR', provider_message_id: null });
    const [request] = sendsTo(phone);
    expect(request.body).toMatchObject({ biz_opaque_callback_data: id });

    // Meta had it: its receipt carries the reference back.
    const wamid = 'wamid.HBgLMTQxNTU1NTAxMjM0FQIAERgSQjU4RkU2';
    const receipt = signedNotification(
      metaNotification({
        phoneNumberId: channel.phoneNumberId,
        statuses: [statusReceipt(wamid, 'delivered', phone, { biz_opaque_callback_data: id })],
      }),
      'app-secret',
    );
    const posted = await t.app.inject({
      method: 'POST',
      url: '/channels/whatsapp/webhook',
      headers: receipt.headers,
      payload: receipt.payload,
    });
    expect(posted.statusCode).toBe(200);
    expect(await messageRow(t, id)).toMatchObject({ status: 'DELIVERED', provider_message_id: wamid, error: null });
    const status = await t.app.inject({
      method: 'GET',
      url: `/external/v2/messages/status/${id}`,
      headers: tenant.headers,
    });
    expect(status.json().message.status).not.toBe('failed');
    expect(sendsTo(phone)).toHaveLength(1);
  });

  it("keeps a receipt that arrives before the send's answer is stored", async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    fake.setDelay(400);
    try {
      const id = (await send(t.app, phone)).json().message.uuid as string;
      await until(() => sendsTo(phone).length === 1);
      const wamid = 'wamid.HBgLMTQxNTU1NTAxMjM0FQIAERgSQjU4RkU3';
      const receipt = signedNotification(
        metaNotification({
          phoneNumberId: channel.phoneNumberId,
          statuses: [statusReceipt(wamid, 'delivered', phone, { biz_opaque_callback_data: id })],
        }),
        'app-secret',
      );
      expect(
        (
          await t.app.inject({
            method: 'POST',
            url: '/channels/whatsapp/webhook',
            headers: receipt.headers,
            payload: receipt.payload,
          })
        ).statusCode,
      ).toBe(200);
      expect(await messageRow(t, id)).toMatchObject({ status: 'DELIVERED', provider_message_id: wamid });
      // The send's answer, stored after, does not move it back to SENT; its job completes.
      await until(async () => (await outbox(id)).state === 'done');
      expect(await messageRow(t, id)).toMatchObject({ status: 'DELIVERED', provider_message_id: wamid, error: null });
    } finally {
      fake.setDelay(0);
    }
  });

  it.each<[string, GraphFailure]>([
    [
      '131047 outside the window',
      {
        status: 400,
        code: 131047,
        message: '(#131047) Re-engagement message',
        details: 'Message failed to send because more than 24 hours have passed',
      },
    ],
    ['131026 undeliverable', { status: 400, code: 131026, message: '(#131026) Message undeliverable' }],
    [
      '100 invalid parameter',
      { status: 400, code: 100, message: '(#100) Invalid parameter', details: 'Parameter value is not valid' },
    ],
  ])('marks %s ERROR with the provider detail, without retrying', async (_name, failure) => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    fake.failNextSends(1, failure);
    const id = (await send(t.app, phone)).json().message.uuid as string;
    const row = await settled(t, id);
    const detail = `${failure.message}${failure.details ? `: ${failure.details}` : ''}`;
    expect(row).toMatchObject({
      status: 'ERROR',
      error: `${failure.code}: ${detail}`,
      send_attempts: 1,
      provider_message_id: null,
    });
    expect(sendsTo(phone)).toHaveLength(1);
    expect(await outbox(id)).toMatchObject({ state: 'failed', last_error: row.error });
    const status = await t.app.inject({
      method: 'GET',
      url: `/external/v2/messages/status/${id}`,
      headers: tenant.headers,
    });
    expect(status.json().message).toMatchObject({ status: 'failed', error: `${failure.code}: ${detail}` });
  });

  it('gives up after the last attempt', async () => {
    await t.app.worker.stop();
    const worker = new OutboxWorker(t.database.db, { error: () => undefined }, { pollMs: 20 }).register(
      new SendJobHandler(
        { db: t.database.db, channels: t.app.services.channels, pacer: new ChannelPacer() },
        { maxAttempts: 3, baseDelaySeconds: 0.05 },
      ),
    );
    try {
      const { phone } = await inboundContact(t, tenant, channel, 1);
      fake.failNextSends(5, { status: 400, code: 130429, message: '(#130429) Rate limit hit' });
      const id = (await send(t.app, phone)).json().message.uuid as string;
      worker.start();
      const row = await settled(t, id);
      expect(row).toMatchObject({ status: 'ERROR', error: '130429: (#130429) Rate limit hit', send_attempts: 3 });
      expect(sendsTo(phone)).toHaveLength(3);
    } finally {
      await worker.stop();
      t.app.worker.start();
    }
  });
});

describe('send worker: pacing', () => {
  it('keeps a channel at its pace (5/s): 15 sends spread over >= 2 s, never more than 6 in a second', async () => {
    const slow = await createChannel(t.app, tenant, fake, { pace_per_second: 5 });
    const { phone } = await inboundContact(t, tenant, slow, 1);
    const times: number[] = [];
    const push = fake.requests.push.bind(fake.requests);
    fake.requests.push = (...items) => {
      times.push(performance.now());
      return push(...items);
    };
    try {
      const ids: string[] = [];
      for (let i = 0; i < 15; i++) ids.push((await send(t.app, phone, slow.id)).json().message.uuid as string);
      for (const id of ids) expect((await settled(t, id)).status).toBe('SENT');
    } finally {
      fake.requests.push = push;
    }
    expect(times).toHaveLength(15);
    expect(times[14] - times[0]).toBeGreaterThanOrEqual(2_000);
    for (const start of times)
      expect(times.filter((x) => x >= start && x < start + 1_000).length).toBeLessThanOrEqual(6);
  });
});

describe('send worker: crash recovery', () => {
  it('sends a job left pending by a stopped process exactly once after the restart', async () => {
    await t.app.worker.stop();
    try {
      const { phone } = await inboundContact(t, tenant, channel, 1);
      const api = await secondApp(false);
      const id = (await send(api, phone)).json().message.uuid as string;
      await api.close();
      expect((await outbox(id)).state).toBe('pending');
      const restarted = await secondApp(true);
      try {
        expect((await settled(t, id)).status).toBe('SENT');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(sendsTo(phone)).toHaveLength(1);
      } finally {
        await restarted.close();
      }
    } finally {
      t.app.worker.start();
    }
  });

  it('sends a job claimed by a process that stopped before the provider call exactly once', async () => {
    await t.app.worker.stop();
    try {
      const { phone } = await inboundContact(t, tenant, channel, 1);
      const id = (await send(t.app, phone)).json().message.uuid as string;
      // What a claim leaves behind when its process dies before calling the provider, lease run out.
      await t.database.db
        .updateTable('outbox')
        .set({ state: 'running', attempts: 1, locked_until: sql<string>`now() - interval '1 second'` })
        .where('ref_id', '=', id)
        .execute();
      t.app.worker.start();
      expect((await settled(t, id)).status).toBe('SENT');
      expect(sendsTo(phone)).toHaveLength(1);
    } finally {
      t.app.worker.start();
    }
  });

  it('never resends a message whose process stopped during the provider call', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    // Longer than a second app takes to start and take the job over, even on a loaded machine.
    fake.setDelay(8_000);
    const id = (await send(t.app, phone)).json().message.uuid as string;
    await until(() => sendsTo(phone).length === 1);
    expect((await messageRow(t, id)).provider_call_at).not.toBeNull();
    // The first process is stuck in the call; its lease runs out as if it had died, and another process takes over.
    await t.database.db
      .updateTable('outbox')
      .set({ locked_until: sql<string>`now() - interval '1 second'` })
      .where('ref_id', '=', id)
      .execute();
    const restarted = await secondApp(true);
    try {
      const row = await settled(t, id);
      expect(row).toMatchObject({ status: 'ERROR', error: OUTCOME_UNKNOWN, provider_message_id: null });
      // The late answer of the first call changes nothing, and nobody calls again.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(sendsTo(phone)).toHaveLength(1);
      expect((await messageRow(t, id)).status).toBe('ERROR');
    } finally {
      fake.setDelay(0);
      await restarted.close();
    }
  });
});
