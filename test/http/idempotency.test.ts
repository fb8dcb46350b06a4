import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireApiKey } from '../../src/http/api-key-auth.ts';
import { AppError, registerErrorHandling } from '../../src/http/errors.ts';
import { registerIdempotency, requestHash } from '../../src/http/idempotency.ts';
import { registerValidation } from '../../src/http/validation.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let acme: Tenant;
let other: Tenant;
let api: FastifyInstance;
let runs = 0;
const held: (() => void)[] = [];

// The mechanism on a small Fastify instance over the real database and services, with the same
// hooks the app installs; the send routes are exercised at the end of the file.
beforeAll(async () => {
  // The fake Graph API listens on loopback, a private target.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  acme = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  api = Fastify({ logger: false });
  registerValidation(api);
  registerErrorHandling(api);
  await api.register(async (scope) => {
    requireApiKey(scope, (key) => t.app.services.apiKeys.resolve(key));
    registerIdempotency(scope, t.app.services.idempotency);
    scope.post('/things', { config: { idempotency: 'things.create' } }, async (request, reply) => {
      runs += 1;
      const body = (request.body ?? {}) as { fail?: number; hold?: boolean };
      if (body.hold) await new Promise<void>((resolve) => held.push(resolve));
      if (body.fail === 400) throw new AppError(400, 'validation_error', `refused run ${runs}`);
      if (body.fail === 500) throw new Error('boom');
      return reply.status(201).send({ run: runs, body: request.body ?? null, query: request.query });
    });
    scope.post('/other-things', { config: { idempotency: 'other-things.create' } }, async () => ({ run: (runs += 1) }));
    scope.post('/plain', async () => ({ run: (runs += 1) }));
  });
  await api.ready();
});
afterAll(async () => {
  await api.close();
  await t.close();
});

let keySeq = 0;
const newKey = () => `key-${Date.now()}-${(keySeq += 1)}`;
const post = (key: string | undefined, payload: object, opts: { tenant?: Tenant; url?: string } = {}) =>
  api.inject({
    method: 'POST',
    url: opts.url ?? '/things',
    headers: { ...(opts.tenant ?? acme).headers, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload,
  });

describe('Idempotency-Key', () => {
  it('runs every request without a key', async () => {
    const a = await post(undefined, { x: 1 });
    const b = await post(undefined, { x: 1 });
    expect(b.json().run).toBe(a.json().run + 1);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
  });

  it('replays the first answer for the same key and request, whatever the key order of the body', async () => {
    const key = newKey();
    const first = await post(key, { a: 1, b: { c: [1, 2], d: 'x' } });
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await post(key, { b: { d: 'x', c: [1, 2] }, a: 1 });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const third = await post(key, { a: 1, b: { c: [1, 2], d: 'x' } });
    expect(third.json().run).toBe(first.json().run);
  });

  it('answers 422 idempotency_key_reused for the same key with another body or query', async () => {
    const key = newKey();
    expect((await post(key, { a: 1 })).statusCode).toBe(201);
    const otherBody = await post(key, { a: 2 });
    expect(otherBody.statusCode).toBe(422);
    expect(otherBody.json().error.code).toBe('idempotency_key_reused');
    const otherQuery = await post(key, { a: 1 }, { url: '/things?x=1' });
    expect(otherQuery.statusCode).toBe(422);
    // The stored answer is untouched.
    expect((await post(key, { a: 1 })).headers['idempotent-replayed']).toBe('true');
  });

  it('stores and replays a 4xx answer', async () => {
    const key = newKey();
    const first = await post(key, { fail: 400 });
    expect(first.statusCode).toBe(400);
    const again = await post(key, { fail: 400 });
    expect(again.statusCode).toBe(400);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
  });

  it('does not store a 5xx answer, so a retry with the same key runs again', async () => {
    const key = newKey();
    const before = runs;
    expect((await post(key, { fail: 500 })).statusCode).toBe(500);
    const retry = await post(key, { fail: 500 });
    expect(retry.statusCode).toBe(500);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(runs).toBe(before + 2);
    const rows = await t.database.db.selectFrom('idempotency_keys').select('key').where('key', '=', key).execute();
    expect(rows).toEqual([]);
  });

  it('answers 409 while the first request runs; concurrent firsts run once', async () => {
    const key = newKey();
    const before = runs;
    const first = post(key, { hold: true });
    await until(() => held.length === 1);
    const during = await Promise.all([post(key, { hold: true }), post(key, { hold: true }), post(key, { hold: true })]);
    for (const res of during) {
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('conflict');
    }
    held.shift()!();
    expect((await first).statusCode).toBe(201);
    expect(runs).toBe(before + 1);
    const after = await post(key, { hold: true });
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(runs).toBe(before + 1);
  });

  it('decides between simultaneous first requests in the database: exactly one runs', async () => {
    const key = newKey();
    const before = runs;
    const all = Promise.all(Array.from({ length: 6 }, () => post(key, { hold: true })));
    await until(() => held.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(held).toHaveLength(1);
    held.shift()!();
    const statuses = (await all).map((r) => r.statusCode).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(5);
    expect(runs).toBe(before + 1);
  });

  it('lets a repeat take over a claim left running for more than a minute, and only then', async () => {
    const key = newKey();
    const before = runs;
    const hash = requestHash('POST', 'things.create', { a: 1 }, {});
    // A first request that died holding the key: claimed, nothing stored.
    const dead = await t.app.services.idempotency.begin(
      { businessId: acme.businessId, route: 'things.create', key },
      hash,
    );
    expect(dead.kind).toBe('run');
    const age = (seconds: number) =>
      t.database.db
        .updateTable('idempotency_keys')
        .set({ created_at: sql<string>`now() - make_interval(secs => ${seconds})` })
        .where('business_id', '=', acme.businessId)
        .where('key', '=', key)
        .execute();
    await age(59);
    expect((await post(key, { a: 1 })).statusCode).toBe(409);
    await age(61);
    expect((await post(key, { a: 2 })).statusCode).toBe(422);
    const retry = await post(key, { a: 1 });
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(runs).toBe(before + 1);
    const replay = await post(key, { a: 1 });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(retry.json());
    // The dead request's lease is gone: it can neither answer nor free the key any more.
    if (dead.kind !== 'run') throw new Error('unreachable');
    await t.app.services.idempotency.finish(dead.claim, 201, { stale: true });
    await t.app.services.idempotency.release(dead.claim);
    expect((await post(key, { a: 1 })).json()).toEqual(retry.json());
  });

  it('keeps the answer of the request that took over when the slow first one finishes after it', async () => {
    const key = newKey();
    const before = runs;
    const first = post(key, { hold: true, slow: 1 });
    await until(() => held.length === 1);
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql<string>`now() - interval '61 seconds'` })
      .where('business_id', '=', acme.businessId)
      .where('key', '=', key)
      .execute();
    const second = post(key, { hold: true, slow: 1 });
    await until(() => held.length === 2);
    held.pop()!();
    const secondAnswer = await second;
    expect(secondAnswer.statusCode).toBe(201);
    held.shift()!();
    expect((await first).statusCode).toBe(201);
    expect(runs).toBe(before + 2);
    const replay = await post(key, { hold: true, slow: 1 });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(secondAnswer.json());
  });

  it('forgets a key after 24 hours', async () => {
    const key = newKey();
    const first = await post(key, { a: 1 });
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql<string>`now() - interval '24 hours 1 second'` })
      .where('business_id', '=', acme.businessId)
      .where('key', '=', key)
      .execute();
    // Expired: the same body runs again, and so would another body.
    const again = await post(key, { a: 1 });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.json().run).toBeGreaterThan(first.json().run);
    expect((await post(key, { a: 1 })).headers['idempotent-replayed']).toBe('true');
  });

  it('deletes expired keys in the periodic cleanup and keeps fresh ones', async () => {
    const stale = newKey();
    const fresh = newKey();
    await post(stale, {});
    await post(fresh, {});
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql<string>`now() - interval '25 hours'` })
      .where('key', '=', stale)
      .execute();
    expect(await t.app.services.idempotency.deleteExpired(1)).toBeGreaterThanOrEqual(1);
    const keys = (
      await t.database.db.selectFrom('idempotency_keys').select('key').where('key', 'in', [stale, fresh]).execute()
    ).map((r) => r.key);
    expect(keys).toEqual([fresh]);
  });

  it('scopes keys per business and per route', async () => {
    const key = newKey();
    const mine = await post(key, { who: 'acme' });
    const theirs = await post(key, { who: 'other' }, { tenant: other });
    expect(theirs.statusCode).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json().run).not.toBe(mine.json().run);
    const route = await post(key, { who: 'acme' }, { url: '/other-things' });
    expect(route.statusCode).toBe(200);
    expect(route.headers['idempotent-replayed']).toBeUndefined();
  });

  it('ignores the header on routes that are not idempotent', async () => {
    const key = newKey();
    const a = await post(key, {}, { url: '/plain' });
    const b = await post(key, {}, { url: '/plain' });
    expect(b.json().run).toBe(a.json().run + 1);
  });

  it('refuses a key that is empty, too long or not printable with 400', async () => {
    for (const key of ['', 'k'.repeat(256), 'tab\there', 'ñandú']) {
      const res = await post(key, {});
      expect(res.statusCode, JSON.stringify(key)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect((await post('k'.repeat(255), {})).statusCode).toBe(201);
  });
});

describe('Idempotency-Key on the send routes', () => {
  let graph: FakeGraphApi;
  beforeAll(async () => {
    graph = await startFakeGraphApi();
  });
  afterAll(() => graph.close());

  it('POST /send-template replays the first answer and sends once; another body answers 422', async () => {
    const channel = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${acme.businessId}/channels`,
      headers: adminHeaders,
      payload: {
        type: 'whatsapp',
        identifier: '14155550100',
        provider: {
          kind: 'whatsapp_cloud',
          phone_number_id: '1099',
          access_token: graph.accessToken,
          app_secret: 'secret',
          verify_token: 'verify',
          api_base_url: graph.baseUrl,
        },
      },
    });
    expect(channel.statusCode).toBe(201);
    const template = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${acme.businessId}/templates`,
      headers: adminHeaders,
      payload: { name: 'hello', language: 'en', body: 'Hello {{1}}' },
    });
    expect(template.statusCode).toBe(201);
    const send = (payload: object) =>
      t.app.inject({
        method: 'POST',
        url: `/external/v2/send-template?template_id=${template.json().template.id}&from_phone_number=14155550100`,
        headers: { ...acme.headers, 'idempotency-key': 'send-once-1' },
        payload,
      });
    const first = await send({ phone: '5491155550000', 1: 'Ada' });
    expect(first.statusCode).toBe(200);
    const again = await send({ 1: 'Ada', phone: '5491155550000' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const changed = await send({ phone: '5491155550000', 1: 'Grace' });
    expect(changed.statusCode).toBe(422);
    expect(changed.json().error.code).toBe('idempotency_key_reused');
    const messages = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', acme.businessId)
      .where('direction', '=', 'outbound')
      .execute();
    expect(messages.map((m) => m.id)).toEqual([first.json().message_id]);
    await until(() => graph.sends().length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(graph.sends()).toHaveLength(1);
  });

  it("stores a send's answer with the send: a repeat after an answer lost with the server replays it", async () => {
    const { query, url } = await templateSetup('14155550111', '1100');
    const body = { phone: '5491155550111', 1: 'Ada' };
    const key = { businessId: acme.businessId, route: 'send-template', key: 'lost-answer-1' };
    // The route's work, without the hooks that store the answer as it leaves: as if the process
    // stopped right after the commit.
    const decision = await t.app.services.idempotency.begin(key, requestHash('POST', 'send-template', body, query));
    if (decision.kind !== 'run') throw new Error(`expected run, got ${decision.kind}`);
    const sent = await t.app.services.sending.sendTemplate(acme.businessId, query, body, decision.claim);
    const repeat = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...acme.headers, 'idempotency-key': key.key },
      payload: body,
    });
    expect(repeat.statusCode).toBe(200);
    expect(repeat.headers['idempotent-replayed']).toBe('true');
    expect(repeat.json()).toEqual(sent);
    const messages = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', acme.businessId)
      .where('recipient_address', '=', '5491155550111')
      .execute();
    expect(messages.map((m) => m.id)).toEqual([sent.message_id]);
  });

  it('refuses with 409, writing nothing, a send whose claim a repeat took over', async () => {
    const { query } = await templateSetup('14155550122', '1101');
    const body = { phone: '5491155550122', 1: 'Ada' };
    const key = { businessId: acme.businessId, route: 'send-template', key: 'taken-over-1' };
    const hash = requestHash('POST', 'send-template', body, query);
    const slow = await t.app.services.idempotency.begin(key, hash);
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql<string>`now() - interval '61 seconds'` })
      .where('business_id', '=', acme.businessId)
      .where('key', '=', key.key)
      .execute();
    const repeat = await t.app.services.idempotency.begin(key, hash);
    if (slow.kind !== 'run' || repeat.kind !== 'run') throw new Error('both should run');
    await expect(
      t.app.services.sending.sendTemplate(acme.businessId, query, body as never, slow.claim),
    ).rejects.toMatchObject({ kind: 'conflict', code: 'conflict' });
    const none = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', acme.businessId)
      .where('recipient_address', '=', '5491155550122')
      .execute();
    expect(none).toEqual([]);
    const sent = await t.app.services.sending.sendTemplate(acme.businessId, query, body, repeat.claim);
    const one = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', acme.businessId)
      .where('recipient_address', '=', '5491155550122')
      .execute();
    expect(one.map((m) => m.id)).toEqual([sent.message_id]);
  });

  /** A WhatsApp channel of acme on the fake Graph API and a one-variable template; the send-template query and URL. */
  async function templateSetup(number: string, phoneNumberId: string) {
    const channel = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${acme.businessId}/channels`,
      headers: adminHeaders,
      payload: {
        type: 'whatsapp',
        identifier: number,
        provider: {
          kind: 'whatsapp_cloud',
          phone_number_id: phoneNumberId,
          access_token: graph.accessToken,
          app_secret: 'secret',
          verify_token: `verify-${number}`,
          api_base_url: graph.baseUrl,
        },
      },
    });
    expect(channel.statusCode).toBe(201);
    const template = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${acme.businessId}/templates`,
      headers: adminHeaders,
      payload: { name: `hello_${number}`, language: 'en', body: 'Hello {{1}}' },
    });
    expect(template.statusCode).toBe(201);
    const query = { template_id: template.json().template.id as string, from_phone_number: number };
    return { query, url: `/external/v2/send-template?template_id=${query.template_id}&from_phone_number=${number}` };
  }

  it('POST /messages/send replays a refusal and documents the header', async () => {
    const send = () =>
      t.app.inject({
        method: 'POST',
        url: '/external/v2/messages/send',
        headers: { ...acme.headers, 'idempotency-key': 'refused-1' },
        payload: {
          to: '5491155550001',
          from: 'whatsapp',
          type: 'text',
          content: { text: 'hi' },
          channel_uuid: '0190a0a0-0000-7000-8000-000000000000',
        },
      });
    const first = await send();
    expect(first.statusCode).toBe(404);
    const again = await send();
    expect(again.statusCode).toBe(404);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const params = doc.paths['/external/v2/messages/send'].post.parameters as { name: string; in: string }[];
    expect(params).toContainEqual(expect.objectContaining({ name: 'idempotency-key', in: 'header' }));
  });
});

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
