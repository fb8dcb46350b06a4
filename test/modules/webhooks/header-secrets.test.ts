import type { IncomingHttpHeaders } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SecretBox } from '../../../src/lib/secret-box.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import {
  buildWebhookApp,
  createWebhook,
  Receiver,
  sharedDatabase,
  storeMessage,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

/** Custom header values: sealed at rest, masked in answers, sent as they are. */

let shared: SharedDatabase;
let t: WebhookTestApp;
let receiver: Receiver;
let tenant: Tenant;
let conversation: Awaited<ReturnType<typeof storeMessage>>['conversation'] | undefined;
/** Everything the app logged, at debug level. */
let logged = '';

beforeAll(async () => {
  shared = await sharedDatabase();
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  t = await buildWebhookApp(shared, { log: pino({ level: 'debug' }, sink) });
});
afterAll(async () => {
  await t.close();
  await shared.drop();
});
beforeEach(async () => {
  receiver = await Receiver.start();
  tenant = await createTenant(t.app);
  conversation = undefined;
});
afterEach(() => receiver.close());

const base = (businessId = tenant.businessId) => `/admin/v1/businesses/${businessId}/webhooks`;
const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: adminHeaders, ...(payload === undefined ? {} : { payload }) });
const box = () => new SecretBox(t.config.secretKeys, 'webhook-headers');

/** The webhook's headers as the table holds them. */
const storedRow = (id: string) =>
  t.database.db
    .selectFrom('webhooks')
    .select(['headers', 'headers_sealed'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

/** Stored values opened. */
const opened = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, box().open(value)]));

/** Stores a message of the tenant's conversation and answers the headers of the call it caused. */
async function deliveredHeaders(): Promise<IncomingHttpHeaders> {
  const seen = receiver.calls.length;
  conversation = (await storeMessage(t, tenant.businessId, { conversation })).conversation;
  return (await receiver.waitFor(seen + 1))[seen].headers;
}

describe('webhook custom header values', () => {
  it('are stored sealed, shown masked in every answer, sent as they are and never logged', async () => {
    const values: Record<string, string> = {
      Authorization: 'Bearer crm-token-5678',
      'X-Short': 'abcd',
      'X-Empty': '',
    };
    const masked = { Authorization: '••••5678', 'X-Short': '••••', 'X-Empty': '••••' };
    const created = await call('POST', base(), { event: 'message_created', url: receiver.url, headers: values });
    expect(created.statusCode).toBe(201);
    const { webhook } = created.json();
    expect(webhook.headers).toEqual(masked);

    const row = await storedRow(webhook.id);
    expect(row.headers_sealed).toBe(true);
    expect(Object.keys(row.headers).sort()).toEqual(Object.keys(values).sort());
    for (const [name, value] of Object.entries(row.headers)) {
      expect(value, name).toMatch(/^sb1\./);
      expect(box().open(value), name).toBe(values[name]);
    }
    expect(JSON.stringify(row.headers)).not.toContain('crm-token');

    const read = await call('GET', `${base()}/${webhook.id}`);
    const list = await call('GET', base());
    const edited = await call('PATCH', `${base()}/${webhook.id}`, { method: 'POST' });
    expect(read.json().webhook.headers).toEqual(masked);
    expect(list.json().webhooks).toEqual([expect.objectContaining({ id: webhook.id, headers: masked })]);
    expect(edited.json().webhook.headers).toEqual(masked);
    for (const res of [created, read, list, edited]) expect(res.body).not.toContain('crm-token');

    const sent = await deliveredHeaders();
    expect(sent.authorization).toBe('Bearer crm-token-5678');
    expect(sent['x-short']).toBe('abcd');
    expect(sent['x-empty']).toBe('');
    expect(logged).toContain('request completed');
    expect(logged).not.toContain('crm-token');
  });

  it('replace the value of a header sent with one, keep it for one sent with the mask read back, and drop the others', async () => {
    const { webhook } = await createWebhook(t.app, tenant.businessId, {
      url: receiver.url,
      headers: { Authorization: 'Bearer one-1111', 'X-Tenant': 'acme-corp' },
    });
    const url = `${base()}/${webhook.id}`;
    const sealed = await storedRow(webhook.id);
    const read = (await call('GET', url)).json().webhook.headers;
    expect(read).toEqual({ Authorization: '••••1111', 'X-Tenant': '••••corp' });

    const edited = await call('PATCH', url, {
      headers: { Authorization: read.Authorization, 'X-Tenant': 'globex-inc' },
    });
    expect(edited.statusCode).toBe(200);
    expect(edited.json().webhook.headers).toEqual({ Authorization: '••••1111', 'X-Tenant': '••••-inc' });
    const kept = await storedRow(webhook.id);
    expect(kept.headers.Authorization).toBe(sealed.headers.Authorization);
    expect(box().open(kept.headers['X-Tenant'])).toBe('globex-inc');
    let sent = await deliveredHeaders();
    expect([sent.authorization, sent['x-tenant']]).toEqual(['Bearer one-1111', 'globex-inc']);

    // Names compare without case; the name is stored as sent. A header left out is removed, and an
    // edit without `headers` leaves them.
    const renamed = await call('PATCH', url, { headers: { authorization: '••••1111' } });
    expect(renamed.json().webhook.headers).toEqual({ authorization: '••••1111' });
    expect((await call('PATCH', url, { method: 'PUT' })).json().webhook.headers).toEqual({ authorization: '••••1111' });
    sent = await deliveredHeaders();
    expect(sent.authorization).toBe('Bearer one-1111');
    expect(sent['x-tenant']).toBeUndefined();

    const replaced = await call('PATCH', url, { headers: { Authorization: 'Bearer two-2222' } });
    expect(replaced.json().webhook.headers).toEqual({ Authorization: '••••2222' });
    expect((await deliveredHeaders()).authorization).toBe('Bearer two-2222');

    const cleared = await call('PATCH', url, { headers: {} });
    expect(cleared.json().webhook.headers).toEqual({});
    expect((await storedRow(webhook.id)).headers).toEqual({});
    expect((await deliveredHeaders()).authorization).toBeUndefined();
  });

  it('take a mask only as it was read, for a value that is stored; anything else is refused with 400 and changes nothing', async () => {
    const { webhook } = await createWebhook(t.app, tenant.businessId, {
      url: receiver.url,
      headers: { Authorization: 'Bearer one-1111' },
    });
    const url = `${base()}/${webhook.id}`;
    const before = await storedRow(webhook.id);
    const refusals: [string, object, string][] = [
      [
        'POST',
        { event: 'message_created', url: receiver.url, headers: { Authorization: '••••1111' } },
        '/headers/Authorization',
      ],
      ['PATCH', { headers: { 'X-Other': '••••1111' } }, '/headers/X-Other'],
      ['PATCH', { headers: { Authorization: '••••9999' } }, '/headers/Authorization'],
      ['PATCH', { headers: { Authorization: '••••' } }, '/headers/Authorization'],
      // Not a mask at all: refused by the body's schema.
      ['PATCH', { headers: { Authorization: '••••111' } }, 'headers'],
      ['PATCH', { headers: { Authorization: '•••1111' } }, 'headers'],
      ['PATCH', { headers: { Authorization: '••••11111' } }, 'headers'],
      ['PATCH', { headers: { Authorization: 'Bearer ••••1111' } }, 'headers'],
      ['PATCH', { headers: { Authorization: '••••111 ' } }, 'headers'],
    ];
    for (const [method, payload, where] of refusals) {
      const res = await call(method as 'POST' | 'PATCH', method === 'POST' ? base() : url, payload);
      const label = `${method} ${JSON.stringify(payload)}: ${res.body}`;
      expect(res.statusCode, label).toBe(400);
      expect(res.json().error.code, label).toBe('validation_error');
      expect(res.body, label).toContain(where);
    }
    expect(await storedRow(webhook.id)).toEqual(before);
    expect((await call('GET', base())).json().webhooks).toHaveLength(1);
    expect((await call('PATCH', url, { headers: { Authorization: '••••1111' } })).statusCode).toBe(200);
    expect((await deliveredHeaders()).authorization).toBe('Bearer one-1111');
  });

  it("answer 404 for another business's webhook, whose values stay as they are and cannot be kept elsewhere", async () => {
    const other = await createTenant(t.app, 'Other');
    const theirs = await createWebhook(t.app, other.businessId, {
      url: receiver.url,
      headers: { Authorization: 'Bearer theirs-9999' },
    });
    const before = await storedRow(theirs.webhook.id);
    const mine = `${base()}/${theirs.webhook.id}`;
    for (const payload of [
      { headers: { Authorization: '••••9999' } },
      { headers: { Authorization: 'Bearer mine-0000' } },
    ]) {
      const res = await call('PATCH', mine, payload);
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    expect((await call('GET', mine)).statusCode).toBe(404);
    expect(await storedRow(theirs.webhook.id)).toEqual(before);
    expect((await call('GET', `${base(other.businessId)}/${theirs.webhook.id}`)).json().webhook.headers).toEqual({
      Authorization: '••••9999',
    });

    // Their mask names nothing stored on a webhook of this business.
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const keep = await call('PATCH', `${base()}/${webhook.id}`, { headers: { Authorization: '••••9999' } });
    expect(keep.statusCode, keep.body).toBe(400);
    expect((await storedRow(webhook.id)).headers).toEqual({});
  });

  it('stored in the clear before sealing (as migration 0016 leaves them) are sent as they are, and sealed at start or on an edit', async () => {
    // A value is any text the business chose, so it may begin like a sealed one.
    const legacy = { Authorization: 'Bearer legacy-4321', 'X-Host': 'sb1.acme.example' };
    const inTheClear = async (id: string) =>
      t.database.db
        .updateTable('webhooks')
        .set({ headers: JSON.stringify(legacy), headers_sealed: false })
        .where('id', '=', id)
        .execute();
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await inTheClear(webhook.id);
    const masked = { Authorization: '••••4321', 'X-Host': '••••mple' };
    expect((await call('GET', `${base()}/${webhook.id}`)).json().webhook.headers).toEqual(masked);
    let sent = await deliveredHeaders();
    expect([sent.authorization, sent['x-host']]).toEqual(Object.values(legacy));

    const service = t.app.services.webhooks.service;
    expect(await service.sealStored()).toEqual({ sealed: 1, unopened: 0 });
    expect(await service.sealStored()).toEqual({ sealed: 0, unopened: 0 });
    const row = await storedRow(webhook.id);
    expect(row.headers_sealed).toBe(true);
    expect(opened(row.headers)).toEqual(legacy);
    expect(Object.values(row.headers).every((v) => v.startsWith('sb1.') && !v.includes('legacy'))).toBe(true);
    expect((await call('GET', `${base()}/${webhook.id}`)).json().webhook.headers).toEqual(masked);
    sent = await deliveredHeaders();
    expect([sent.authorization, sent['x-host']]).toEqual(Object.values(legacy));

    // An edit that keeps values stored in the clear stores them sealed.
    await inTheClear(webhook.id);
    const kept = await call('PATCH', `${base()}/${webhook.id}`, { headers: masked });
    expect(kept.json().webhook.headers).toEqual(masked);
    const edited = await storedRow(webhook.id);
    expect(edited.headers_sealed).toBe(true);
    expect(opened(edited.headers)).toEqual(legacy);
    expect(await service.sealStored()).toEqual({ sealed: 0, unopened: 0 });
  });
});
