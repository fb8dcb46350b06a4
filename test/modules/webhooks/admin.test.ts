import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SecretBox } from '../../../src/lib/secret-box.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import {
  buildWebhookApp,
  createWebhook,
  logOf,
  Receiver,
  sharedDatabase,
  storeMessage,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

let shared: SharedDatabase;
let t: WebhookTestApp;
let receiver: Receiver;
let tenant: Tenant;

beforeAll(async () => {
  shared = await sharedDatabase();
  t = await buildWebhookApp(shared);
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver.close();
  await t.close();
  await shared.drop();
});
beforeEach(async () => {
  tenant = await createTenant(t.app);
});

const base = () => `/admin/v1/businesses/${tenant.businessId}/webhooks`;
const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({
    method,
    url,
    headers: adminHeaders,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

describe('webhooks operator API', () => {
  it('keeps both secrets of two rotations made at once: the later one current, the earlier one previous', async () => {
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const rotate = () => call('POST', `${base()}/${webhook.id}/rotate-secret`);
    const answers = await Promise.all([rotate(), rotate(), rotate()]);
    const secrets = answers.map((res) => res.json().secret as string);
    const row = await t.database.db
      .selectFrom('webhooks')
      .select(['secret', 'previous_secret'])
      .where('id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    const box = new SecretBox(t.config.secretKeys, 'webhook-secrets');
    const [current, previous] = [box.open(row.secret), box.open(row.previous_secret!)];
    expect(secrets).toContain(current);
    expect(secrets).toContain(previous);
    expect(current).not.toBe(previous);
  });

  it('creates, reads, lists, edits and deletes a webhook; the secret is shown only at creation', async () => {
    const created = await call('POST', base(), {
      event: 'message_created',
      url: `${receiver.url}/a`,
      headers: { 'X-Token': 'abc' },
    });
    expect(created.statusCode).toBe(201);
    const { webhook, secret } = created.json();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    // Stored encrypted, never in the clear.
    const stored = await t.database.db
      .selectFrom('webhooks')
      .select('secret')
      .where('id', '=', created.json().webhook.id)
      .executeTakeFirstOrThrow();
    expect(stored.secret).toMatch(/^sb1\./);
    expect(stored.secret).not.toContain(secret.slice(6));
    expect(webhook).toMatchObject({
      event: 'message_created',
      url: `${receiver.url}/a`,
      method: 'POST',
      headers: { 'X-Token': '••••' },
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      last_success_at: null,
    });
    const read = await call('GET', `${base()}/${webhook.id}`);
    expect(read.json()).toEqual({ webhook });
    expect(read.body).not.toContain(secret.slice(6));
    const edited = await call('PATCH', `${base()}/${webhook.id}`, {
      method: 'PUT',
      url: `${receiver.url}/b`,
      headers: {},
      enabled: false,
    });
    expect(edited.statusCode).toBe(200);
    expect(edited.json().webhook).toMatchObject({
      method: 'PUT',
      url: `${receiver.url}/b`,
      headers: {},
      enabled: false,
      disabled_reason: 'disabled_by_operator',
    });
    const second = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const list = await call('GET', base());
    expect(list.json().webhooks.map((w: { id: string }) => w.id)).toEqual([webhook.id, second.webhook.id]);
    expect(list.body).not.toContain('whsec_');
    expect((await call('DELETE', `${base()}/${webhook.id}`)).json()).toEqual({ success: true });
    expect((await call('GET', `${base()}/${webhook.id}`)).statusCode).toBe(404);
    expect((await call('DELETE', `${base()}/${webhook.id}`)).statusCode).toBe(404);
  });

  it('answers 404 for another business, an unknown business and unknown ids', async () => {
    const other = await createTenant(t.app, 'Other');
    const { webhook } = await createWebhook(t.app, other.businessId, { url: receiver.url });
    const mine = `/admin/v1/businesses/${tenant.businessId}/webhooks/${webhook.id}`;
    for (const [method, url, payload] of [
      ['GET', mine],
      ['PATCH', mine, { enabled: false }],
      ['DELETE', mine],
      ['POST', `${mine}/rotate-secret`],
      ['GET', `${mine}/deliveries`],
      ['POST', `${mine}/deliveries/${webhook.id}/redeliver`],
    ] as const) {
      const res = await call(method, url, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    expect((await call('GET', `/admin/v1/businesses/${webhook.id}/webhooks`)).statusCode).toBe(404);
    expect((await call('GET', `/admin/v1/businesses/${other.businessId}/webhooks/${webhook.id}`)).statusCode).toBe(200);
    const noAuth = await t.app.inject({ method: 'GET', url: base() });
    expect(noAuth.statusCode).toBe(401);
  });

  it('validates bodies: event, url, method, headers, unknown fields, types, limits', async () => {
    const url = receiver.url;
    const cases: [unknown, RegExp | string][] = [
      [{ url }, 'event'],
      [{ event: 'message_updated', url }, 'event'],
      [{ event: 'message_created' }, 'url'],
      [{ event: 'message_created', url: 'ftp://example.com/x' }, /http and https/],
      [{ event: 'message_created', url: 'not a url' }, /absolute URL/],
      [{ event: 'message_created', url: 'http://user:pass@example.com/' }, /credentials/],
      [{ event: 'message_created', url: `http://e.com/${'a'.repeat(2000)}` }, 'url'],
      [{ event: 'message_created', url, method: 'GET' }, 'method'],
      [{ event: 'message_created', url, headers: { 'webhook-id': 'x' } }, /webhook-id/],
      [{ event: 'message_created', url, headers: { 'Webhook-Signature': 'x' } }, /Webhook-Signature/],
      [{ event: 'message_created', url, headers: { 'Content-Type': 'text/plain' } }, /Content-Type/],
      [{ event: 'message_created', url, headers: { Host: 'evil' } }, /Host/],
      [{ event: 'message_created', url, headers: { 'X-A': 'a', 'x-a': 'b' } }, /twice/],
      [{ event: 'message_created', url, headers: { 'bad name': 'x' } }, 'headers'],
      [{ event: 'message_created', url, headers: { 'X-A': 'line\r\nbreak' } }, 'headers'],
      [{ event: 'message_created', url, headers: { 'X-A': 'a'.repeat(1001) } }, 'headers'],
      [
        {
          event: 'message_created',
          url,
          headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-${i}`, 'v'])),
        },
        'headers',
      ],
      [{ event: 'message_created', url, headers: { 'X-A': 1 } }, 'headers'],
      // Values a call cannot carry as stored: spaces at an end are dropped, characters beyond
      // Latin-1 make every call fail; printable ASCII only.
      [{ event: 'message_created', url, headers: { 'X-A': ' token' } }, 'headers'],
      [{ event: 'message_created', url, headers: { 'X-A': 'token\t' } }, 'headers'],
      [{ event: 'message_created', url, headers: { 'X-A': '😀' } }, 'headers'],
      [{ event: 'message_created', url, headers: { 'X-A': 'café' } }, 'headers'],
      [{ event: 'message_created', url, enabled: 'yes' }, 'enabled'],
      [{ event: 'message_created', url, secret: 'whsec_mine' }, /unknown field .{0,2}secret/],
    ];
    for (const [payload, expected] of cases) {
      const res = await call('POST', base(), payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 120)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
      if (typeof expected !== 'string') expect(res.body).toMatch(expected);
      else expect(res.body).toContain(expected);
    }
    const malformed = await t.app.inject({
      method: 'POST',
      url: base(),
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      payload: '{"event":',
    });
    expect(malformed.statusCode).toBe(400);
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url });
    const patch = await call('PATCH', `${base()}/${webhook.id}`, { event: 'x' });
    expect(patch.statusCode).toBe(400);
    expect((await call('PATCH', `${base()}/${webhook.id}`, { headers: { 'webhook-timestamp': '1' } })).statusCode).toBe(
      400,
    );
    expect((await call('PATCH', `${base()}/${webhook.id}`, { url: 'gopher://x' })).statusCode).toBe(400);
    expect((await call('PATCH', `${base()}/${webhook.id}`, { headers: { 'X-A': 'x ' } })).statusCode).toBe(400);
    expect((await call('GET', `${base()}/${webhook.id}`)).json().webhook.headers).toEqual({});
    expect((await call('GET', `${base()}/not-a-uuid`)).statusCode).toBe(400);
  });

  it('refuses more than 20 webhooks per business', async () => {
    for (let i = 0; i < 20; i++) await createWebhook(t.app, tenant.businessId, { url: `${receiver.url}/${i}` });
    const res = await call('POST', base(), { event: 'message_created', url: receiver.url });
    expect(res.statusCode).toBe(409);
  });

  it('pages the delivery log newest first and redelivers with the same webhook-id', async () => {
    const local = await Receiver.start();
    try {
      const { webhook } = await createWebhook(t.app, tenant.businessId, { url: local.url });
      const first = await storeMessage(t, tenant.businessId, { message: { text: 'm1' } });
      await local.waitFor(1);
      await storeMessage(t, tenant.businessId, { conversation: first.conversation, message: { text: 'm2' } });
      await local.waitFor(2);
      await storeMessage(t, tenant.businessId, { conversation: first.conversation, message: { text: 'm3' } });
      const all = await logOf(t.app, tenant.businessId, webhook.id, 3);
      const page1 = (await call('GET', `${base()}/${webhook.id}/deliveries?limit=2`)).json();
      expect(page1.deliveries).toEqual(all.slice(0, 2));
      expect(page1.next_cursor).toEqual(expect.any(String));
      const page2 = (
        await call('GET', `${base()}/${webhook.id}/deliveries?limit=2&cursor=${page1.next_cursor}`)
      ).json();
      expect(page2).toEqual({ deliveries: all.slice(2), next_cursor: null });
      expect(all[2].message_id).toBe(first.message.id);
      // Cursors are signed and bound to their webhook: a forged one, or another webhook's, is refused.
      const forged = (value: unknown) => `?cursor=${Buffer.from(JSON.stringify(value)).toString('base64url')}`;
      const { webhook: second } = await createWebhook(t.app, tenant.businessId, { url: `${local.url}/second` });
      expect((await call('GET', `${base()}/${second.id}/deliveries?cursor=${page1.next_cursor}`)).statusCode).toBe(400);
      for (const bad of [
        '?cursor=garbage',
        forged(['1', webhook.id]),
        forged(['2026-01-01T00:00:00Z', '-'.repeat(36)]),
        '?limit=0',
        '?limit=201',
        '?limit=x',
        '?other=1',
      ]) {
        expect((await call('GET', `${base()}/${webhook.id}/deliveries${bad}`)).statusCode, bad).toBe(400);
      }

      const deliveryId = String(all[2].id);
      const redelivered = await call('POST', `${base()}/${webhook.id}/deliveries/${deliveryId}/redeliver`);
      expect(redelivered.statusCode).toBe(202);
      expect(redelivered.json().delivery).toMatchObject({
        id: deliveryId,
        message_id: first.message.id,
        state: 'pending',
      });
      const calls = await local.waitFor(4);
      expect(calls[3].headers['webhook-id']).toBe(deliveryId);
      expect(calls[3].body).toBe(calls[0].body);
      const log = await logOf(t.app, tenant.businessId, webhook.id, 4);
      expect(log[0]).toMatchObject({ id: deliveryId, attempt: 2, ok: true });
      expect((await call('POST', `${base()}/${webhook.id}/deliveries/${webhook.id}/redeliver`)).statusCode).toBe(404);
      await call('PATCH', `${base()}/${webhook.id}`, { enabled: false });
      expect((await call('POST', `${base()}/${webhook.id}/deliveries/${deliveryId}/redeliver`)).statusCode).toBe(409);
    } finally {
      await local.close();
    }
  });

  it('keeps no more than 1 KB of an answer in the log and never shows it elsewhere', async () => {
    const local = await Receiver.start();
    try {
      local.respond = () => ({ status: 200, body: 'é'.repeat(3000) });
      const { webhook } = await createWebhook(t.app, tenant.businessId, { url: local.url });
      await storeMessage(t, tenant.businessId);
      const [entry] = await logOf(t.app, tenant.businessId, webhook.id, 1);
      const body = String(entry.response_body);
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(1024);
      expect(body).toBe('é'.repeat(512));
      expect((await call('GET', `${base()}/${webhook.id}`)).body).not.toContain('é');
    } finally {
      await local.close();
    }
  });
});
