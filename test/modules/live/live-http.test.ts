import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';
import { createWhatsAppChannel, notificationFor, postSigned, type TestChannel } from '../inbound/whatsapp-helpers.ts';
import { eventually, openSse, type SseClient } from './live-helpers.ts';

// GET /dashboard/api/live over a listening server, read as a browser's EventSource reads it, with
// signed-in sessions: what a business's dashboards receive, and never another business's; the
// catch-up after Last-Event-ID; the refusals; the end of a stream with its session.

const PASSWORD = 'correct horse battery staple';
let t: TestApp;
let url: string;
const a = {} as { tenant: Tenant; channel: TestChannel };
const b = {} as { tenant: Tenant; channel: TestChannel };
const open: SseClient[] = [];

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  t = await buildTestApp({}, { live: { heartbeatMs: 200, sessionCheckMs: 200 } });
  url = await listen(t.app);
  for (const [side, name] of [
    [a, 'A'],
    [b, 'B'],
  ] as const) {
    side.tenant = await createTenant(t.app, name);
    side.channel = await createWhatsAppChannel(t.app, side.tenant.businessId);
  }
  await createUser(t.app, a.tenant.businessId, { email: 'ana@a.test', password: PASSWORD });
  await createUser(t.app, b.tenant.businessId, { email: 'bo@b.test', password: PASSWORD });
  await createUser(t.app, a.tenant.businessId, { email: 'cy@a.test', password: PASSWORD });
});
afterAll(async () => {
  for (const client of open) client.close();
  await t.close();
});

/** Opens the stream of a signed-in browser on `base` (this app's unless given). */
async function stream(browser: Browser | undefined, headers: Record<string, string> = {}, base = url) {
  const client = await openSse(`${base}/dashboard/api/live`, {
    ...(browser ? { cookie: `session=${browser.token}` } : {}),
    ...headers,
  });
  open.push(client);
  return client;
}

async function ready(client: SseClient) {
  expect(client.status, client.body).toBe(200);
  expect(await eventually(() => client.named('ready').length > 0)).toBe(true);
  return Number(client.named('ready')[0].id);
}

const inbound = (side: typeof a, from: string, text: string) =>
  postSigned(
    t.app,
    notificationFor(side.channel, { messages: [inboundMessage(from, 'text', { body: text })] }),
    side.channel.appSecret,
  );

describe('GET /dashboard/api/live', () => {
  it("streams an inbound message to the business's dashboards within a second, and never to another business's", async () => {
    const [ofA, ofB] = [
      await stream(await signIn(t.app, 'ana@a.test', PASSWORD)),
      await stream(await signIn(t.app, 'bo@b.test', PASSWORD)),
    ];
    await ready(ofA);
    await ready(ofB);
    expect(ofA.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(ofA.headers.get('cache-control')).toBe('no-cache');
    expect(ofA.headers.get('x-accel-buffering')).toBe('no');
    expect(ofA.retry).toBeGreaterThan(0);

    const res = await inbound(a, '5491100007777', 'hello A');
    const answered = performance.now();
    expect(res.statusCode).toBe(200);
    expect(await eventually(() => ofA.events().some((e) => e.type === 'message_created'), 1000)).toBe(true);
    const frame = ofA.frames.find((f) => f.data.includes('message_created'))!;
    expect(frame.at - answered).toBeLessThan(1000);
    const message = await t.database.db
      .selectFrom('messages')
      .select(['id', 'conversation_id'])
      .where('business_id', '=', a.tenant.businessId)
      .executeTakeFirstOrThrow();
    expect(ofA.events().find((e) => e.type === 'message_created')).toMatchObject({
      subject_id: message.id,
      conversation_id: message.conversation_id,
      data: { direction: 'inbound', status: 'RECEIVED' },
    });
    expect(frame.id).toBe(String(JSON.parse(frame.data).id));

    expect((await inbound(b, '5491100008888', 'hello B')).statusCode).toBe(200);
    expect(await eventually(() => ofB.events().some((e) => e.type === 'message_created'), 1000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ofBusiness = async (businessId: string) =>
      new Set(
        (
          await t.database.db.selectFrom('domain_events').select('id').where('business_id', '=', businessId).execute()
        ).map((r) => Number(r.id)),
      );
    const [idsA, idsB] = [await ofBusiness(a.tenant.businessId), await ofBusiness(b.tenant.businessId)];
    expect(
      ofA
        .events()
        .map((e) => e.id)
        .every((id) => idsA.has(id)),
    ).toBe(true);
    expect(
      ofB
        .events()
        .map((e) => e.id)
        .every((id) => idsB.has(id)),
    ).toBe(true);
    expect(ofB.events().length).toBeGreaterThan(0);
    ofA.close();
    ofB.close();
  });

  it('sends a comment line at each heartbeat', async () => {
    const client = await stream(await signIn(t.app, 'ana@a.test', PASSWORD));
    await ready(client);
    expect(await eventually(() => client.comments >= 2, 2000)).toBe(true);
    client.close();
  });

  it('catches a reconnecting browser up after its Last-Event-ID, then goes on live', async () => {
    const browser = await signIn(t.app, 'ana@a.test', PASSWORD);
    const first = await stream(browser);
    const head = await ready(first);
    first.close();
    expect((await inbound(a, '5491100007777', 'missed 1')).statusCode).toBe(200);
    expect((await inbound(b, '5491100008888', 'not mine')).statusCode).toBe(200);
    expect((await inbound(a, '5491100007777', 'missed 2')).statusCode).toBe(200);
    const missed = (
      await t.database.db
        .selectFrom('domain_events')
        .select('id')
        .where('business_id', '=', a.tenant.businessId)
        .where('id', '>', head)
        .orderBy('id')
        .execute()
    ).map((r) => Number(r.id));
    expect(missed).toHaveLength(2);

    const again = await stream(browser, { 'last-event-id': String(head) });
    await ready(again);
    const replayed = again.frames.slice(
      0,
      again.frames.findIndex((f) => f.event === 'ready'),
    );
    const ids = replayed.map((f) => Number(f.id));
    expect(ids.filter((id) => id > head)).toEqual(missed);
    if (engine === 'pglite') expect(ids).toEqual(missed);

    expect((await inbound(a, '5491100007777', 'live again')).statusCode).toBe(200);
    expect(await eventually(() => again.events().length === replayed.length + 1, 1000)).toBe(true);
    again.close();
  });

  it('refuses without a session, with bad input and past five streams of a session, with the error body', async () => {
    const none = await stream(undefined);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body!)).toMatchObject({ error: { code: 'unauthorized' } });

    const browser = await signIn(t.app, 'ana@a.test', PASSWORD);
    for (const [headers, path] of [
      [{ 'last-event-id': 'abc' }, ''],
      [{ 'last-event-id': '1'.repeat(20) }, ''],
      [{}, '?since=1'],
    ] as const) {
      const res = await fetch(`${url}/dashboard/api/live${path}`, {
        headers: { cookie: `session=${browser.token}`, ...headers },
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: 'validation_error' } });
    }

    const tabs = [];
    for (let i = 0; i < 5; i++) tabs.push(await stream(browser));
    for (const tab of tabs) await ready(tab);
    const sixth = await stream(browser);
    expect(sixth.status).toBe(429);
    expect(JSON.parse(sixth.body!)).toMatchObject({ error: { code: 'too_many_streams' } });
    // A closed tab frees its place (once the server has seen its connection close).
    tabs[0].close();
    let replaced = await stream(browser);
    for (let i = 0; i < 40 && replaced.status === 429; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      replaced = await stream(browser);
    }
    expect(replaced.status).toBe(200);
    replaced.close();
    for (const tab of tabs) tab.close();
  });

  it('ends when its session ends, or moves to another business', async () => {
    const browser = await signIn(t.app, 'ana@a.test', PASSWORD);
    const client = await stream(browser);
    await ready(client);
    expect((await call(t.app, browser, 'DELETE', '/session')).statusCode).toBe(204);
    let ended = false;
    void client.ended.then(() => (ended = true));
    expect(await eventually(() => ended, 2000)).toBe(true);

    // The same person in both businesses: the stream was of A's; switching ends it.
    await createUser(t.app, b.tenant.businessId, { email: 'ana@a.test', password: PASSWORD });
    const both = await signIn(t.app, 'ana@a.test', PASSWORD);
    const view = await call(t.app, both, 'GET', '/session');
    const current = view.json().business.id as string;
    const target = current === a.tenant.businessId ? b.tenant.businessId : a.tenant.businessId;
    const before = await stream(both);
    await ready(before);
    let moved = false;
    void before.ended.then(() => (moved = true));
    expect((await call(t.app, both, 'PUT', '/session/business', { business_id: target })).statusCode).toBe(200);
    expect(await eventually(() => moved, 2000)).toBe(true);
    // The new business's stream is open to it.
    const after = await stream(both);
    await ready(after);
    after.close();
  });

  it('ends its streams when the server closes', async () => {
    const other = await buildApp(t.config, { database: t.database, logger: false, workers: false });
    const base = await listen(other);
    const client = await stream(await signIn(t.app, 'ana@a.test', PASSWORD), {}, base);
    await ready(client);
    await other.close();
    let ended = false;
    void client.ended.then(() => (ended = true));
    expect(await eventually(() => ended, 1000)).toBe(true);
  });
});

describe.runIf(engine === 'postgres')('two server processes on one database', () => {
  it('a message stored through one reaches a stream opened on the other within a second', async () => {
    const other = await buildApp(t.config, { database: t.database, logger: false, workers: false });
    const base = await listen(other);
    try {
      const client = await stream(await signIn(t.app, 'cy@a.test', PASSWORD), {}, base);
      await ready(client);
      const res = await inbound(a, '5491100007777', 'across processes');
      const answered = performance.now();
      expect(res.statusCode).toBe(200);
      expect(await eventually(() => client.events().some((e) => e.type === 'message_created'), 1000)).toBe(true);
      expect(client.frames.at(-1)!.at - answered).toBeLessThan(1000);
      client.close();
    } finally {
      await other.close();
    }
  });
});
