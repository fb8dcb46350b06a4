import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';
import {
  buildWebhookApp,
  Receiver,
  sharedDatabase,
  storeMessage,
  waitUntil,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

let shared: SharedDatabase;
let t: WebhookTestApp;
let receiver: Receiver;
let acme: Tenant;
let other: Tenant;
let admin: Browser;
let agent: Browser;
let stranger: Browser;

beforeAll(async () => {
  shared = await sharedDatabase();
  t = await buildWebhookApp(shared);
  receiver = await Receiver.start();
  acme = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  const password = 'correct horse';
  await createUser(t.app, acme.businessId, { email: 'admin@acme.test', password, role: 'admin' });
  await createUser(t.app, acme.businessId, { email: 'agent@acme.test', password, role: 'agent' });
  await createUser(t.app, other.businessId, { email: 'owner@other.test', password, role: 'owner' });
  admin = await signIn(t.app, 'admin@acme.test', password);
  agent = await signIn(t.app, 'agent@acme.test', password);
  stranger = await signIn(t.app, 'owner@other.test', password);
});
afterAll(async () => {
  await receiver.close();
  await t.close();
  await shared.drop();
});

type Attempt = { id: string; attempt: number; status_code: number | null; next_attempt_at: string | null };

const create = async (browser: Browser, body: Record<string, unknown>) => {
  const res = await call(t.app, browser, 'POST', '/webhooks', { event: 'message_created', ...body });
  if (res.statusCode !== 201) throw new Error(`create webhook: ${res.statusCode} ${res.body}`);
  return res.json<{ webhook: { id: string } & Record<string, unknown>; secret: string }>();
};

/** The webhook's log, read through the dashboard, once it has at least `count` attempts. */
async function logOf(webhookId: string, count: number): Promise<Attempt[]> {
  let entries: Attempt[] = [];
  await waitUntil(async () => {
    entries = (await call(t.app, admin, 'GET', `/webhooks/${webhookId}/deliveries`)).json().deliveries;
    return entries.length >= count;
  });
  return entries;
}

describe('event triggers in the dashboard', () => {
  it('creates, lists, reads, edits, rotates and deletes a webhook; secrets shown once, header values masked', async () => {
    const { webhook, secret } = await create(admin, {
      url: `${receiver.url}/a`,
      method: 'PUT',
      headers: { 'X-Token': 'abcdefgh' },
    });
    expect(secret).toMatch(/^whsec_/);
    expect(webhook).toMatchObject({ method: 'PUT', enabled: true, headers: { 'X-Token': '••••efgh' } });

    const list = await call(t.app, admin, 'GET', '/webhooks');
    expect(list.statusCode).toBe(200);
    expect(list.json().webhooks.map((w: { id: string }) => w.id)).toContain(webhook.id);
    expect(list.body).not.toContain(secret);
    expect(list.body).not.toContain('abcdefgh');
    const read = await call(t.app, admin, 'GET', `/webhooks/${webhook.id}`);
    expect(read.json().webhook).toEqual(webhook);

    const disabled = await call(t.app, admin, 'PATCH', `/webhooks/${webhook.id}`, {
      enabled: false,
      url: `${receiver.url}/b`,
      headers: { 'X-Token': '••••efgh', 'X-Other': 'v' },
    });
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json().webhook).toMatchObject({
      enabled: false,
      disabled_reason: 'disabled_by_operator',
      url: `${receiver.url}/b`,
      headers: { 'X-Token': '••••efgh', 'X-Other': '••••' },
    });
    const enabled = await call(t.app, admin, 'PATCH', `/webhooks/${webhook.id}`, { enabled: true });
    expect(enabled.json().webhook).toMatchObject({ enabled: true, disabled_reason: null });

    const rotated = await call(t.app, admin, 'POST', `/webhooks/${webhook.id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).toMatch(/^whsec_/);
    expect(rotated.json().secret).not.toBe(secret);
    expect(rotated.json().webhook.previous_secret_expires_at).not.toBeNull();

    expect((await call(t.app, admin, 'DELETE', `/webhooks/${webhook.id}`)).statusCode).toBe(204);
    expect((await call(t.app, admin, 'GET', `/webhooks/${webhook.id}`)).statusCode).toBe(404);
  });

  it('logs every attempt with the next retry, and sends a delivery again as a new attempt of it', async () => {
    let failing = true;
    receiver.respond = () => (failing ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' });
    const { webhook } = await create(admin, { url: `${receiver.url}/log` });
    await storeMessage(t, acme.businessId);
    const [failed] = await logOf(webhook.id, 1);
    expect(failed).toMatchObject({ attempt: 1, status_code: 503, ok: false, response_body: 'busy' });
    expect(Date.parse(failed.next_attempt_at!)).toBeGreaterThan(Date.now());

    failing = false;
    const again = await call(t.app, admin, 'POST', `/webhooks/${webhook.id}/deliveries/${failed.id}/redeliver`);
    expect(again.statusCode).toBe(202);
    expect(again.json().delivery).toMatchObject({ id: failed.id, state: 'pending' });
    const [second, first] = await logOf(webhook.id, 2);
    expect(second).toMatchObject({ id: failed.id, attempt: 2, status_code: 200, ok: true, next_attempt_at: null });
    expect(first).toMatchObject({ id: failed.id, attempt: 1, next_attempt_at: null });
    const calls = receiver.calls.filter((c) => c.url === '/log');
    expect(calls).toHaveLength(2);
    expect(calls[1].headers['webhook-id']).toBe(calls[0].headers['webhook-id']);

    // Delivered, and sent again on request: a third attempt of the same delivery.
    expect(
      (await call(t.app, admin, 'POST', `/webhooks/${webhook.id}/deliveries/${failed.id}/redeliver`)).statusCode,
    ).toBe(202);
    expect((await logOf(webhook.id, 3))[0]).toMatchObject({ id: failed.id, attempt: 3, ok: true });

    const page = await call(t.app, admin, 'GET', `/webhooks/${webhook.id}/deliveries?limit=2`);
    const { deliveries, next_cursor: cursor } = page.json();
    expect(deliveries).toHaveLength(2);
    const rest = await call(t.app, admin, 'GET', `/webhooks/${webhook.id}/deliveries?limit=2&cursor=${cursor}`);
    expect(rest.json()).toMatchObject({ deliveries: [{ attempt: 1 }], next_cursor: null });
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });

  it('answers 403 to an agent on every route', async () => {
    const { webhook } = await create(admin, { url: `${receiver.url}/agent` });
    const id = webhook.id;
    for (const [method, url, body] of [
      ['GET', '/webhooks', undefined],
      ['POST', '/webhooks', { event: 'message_created', url: receiver.url }],
      ['GET', `/webhooks/${id}`, undefined],
      ['PATCH', `/webhooks/${id}`, { enabled: false }],
      ['DELETE', `/webhooks/${id}`, undefined],
      ['POST', `/webhooks/${id}/rotate-secret`, undefined],
      ['GET', `/webhooks/${id}/deliveries`, undefined],
      ['POST', `/webhooks/${id}/deliveries/${newId()}/redeliver`, undefined],
    ] as const) {
      const res = await call(t.app, agent, method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().error.code).toBe('forbidden');
    }
    expect((await call(t.app, admin, 'GET', `/webhooks/${id}`)).json().webhook.enabled).toBe(true);
  });

  it("answers 404 for another business's webhook and delivery, and leaves them alone", async () => {
    receiver.respond = () => ({ status: 200, body: 'ok' });
    const { webhook: theirs } = await create(stranger, { url: `${receiver.url}/theirs` });
    await storeMessage(t, other.businessId);
    let delivery = '';
    await waitUntil(async () => {
      const log = (await call(t.app, stranger, 'GET', `/webhooks/${theirs.id}/deliveries`)).json().deliveries;
      delivery = log[0]?.id ?? '';
      return delivery !== '';
    });
    const { webhook: mine } = await create(admin, { url: `${receiver.url}/mine` });
    for (const [method, url, body] of [
      ['GET', `/webhooks/${theirs.id}`, undefined],
      ['PATCH', `/webhooks/${theirs.id}`, { enabled: false }],
      ['DELETE', `/webhooks/${theirs.id}`, undefined],
      ['POST', `/webhooks/${theirs.id}/rotate-secret`, undefined],
      ['GET', `/webhooks/${theirs.id}/deliveries`, undefined],
      ['POST', `/webhooks/${theirs.id}/deliveries/${delivery}/redeliver`, undefined],
      ['POST', `/webhooks/${mine.id}/deliveries/${delivery}/redeliver`, undefined],
    ] as const) {
      const res = await call(t.app, admin, method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    const list = (await call(t.app, admin, 'GET', '/webhooks')).json().webhooks as { id: string }[];
    expect(list.map((w) => w.id)).not.toContain(theirs.id);
    const still = await call(t.app, stranger, 'GET', `/webhooks/${theirs.id}`);
    expect(still.json().webhook).toMatchObject({ enabled: true, url: `${receiver.url}/theirs` });
  });

  it('refuses bad input with 400, unknown fields included, and a write without the CSRF token with 403', async () => {
    const { webhook } = await create(admin, { url: `${receiver.url}/bad` });
    for (const [method, url, body] of [
      ['POST', '/webhooks', { event: 'message_created', url: 'ftp://example.com/x' }],
      ['POST', '/webhooks', { event: 'message_created', url: receiver.url, method: 'GET' }],
      ['POST', '/webhooks', { event: 'message_created', url: receiver.url, secret: 'mine' }],
      ['POST', '/webhooks', { event: 'contact_created', url: receiver.url }],
      ['POST', '/webhooks', { event: 'message_created', url: receiver.url, headers: { 'Content-Type': 'x' } }],
      ['PATCH', `/webhooks/${webhook.id}`, { paused: true }],
      ['PATCH', `/webhooks/${webhook.id}`, { headers: { 'X-New': '••••abcd' } }],
      ['GET', '/webhooks/not-a-uuid', undefined],
      ['GET', `/webhooks/${webhook.id}/deliveries?limit=0`, undefined],
      ['GET', `/webhooks/${webhook.id}/deliveries?cursor=forged`, undefined],
      ['GET', `/webhooks/${webhook.id}/deliveries?offset=10`, undefined],
    ] as const) {
      const res = await call(t.app, admin, method, url, body);
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)}`).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const csrf = await call(t.app, admin, 'DELETE', `/webhooks/${webhook.id}`, undefined, { 'x-csrf-token': 'x' });
    expect(csrf.statusCode).toBe(403);
    expect(csrf.json().error.code).toBe('csrf_failed');
    expect((await call(t.app, admin, 'GET', `/webhooks/${webhook.id}`)).statusCode).toBe(200);
  });

  it('refuses private targets exactly as the operator API does, unless the service allows them', async () => {
    const strict = await buildWebhookApp(shared, { env: { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'false' }, workers: false });
    try {
      const browser = await signIn(strict.app, 'admin@acme.test', 'correct horse');
      const body = { event: 'message_created', url: `${receiver.url}/private` };
      const dashboard = await call(strict.app, browser, 'POST', '/webhooks', body);
      const operator = await strict.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${acme.businessId}/webhooks`,
        headers: adminHeaders,
        payload: body,
      });
      expect(dashboard.statusCode).toBe(400);
      expect(dashboard.json()).toEqual(operator.json());
      expect(dashboard.json().error.message).toMatch(/^url refused/);
    } finally {
      await strict.close();
    }
  });
});
