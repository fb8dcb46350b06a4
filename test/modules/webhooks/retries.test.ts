import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { SecretBox } from '../../../src/lib/secret-box.ts';
import { RETRY_DELAYS_SECONDS } from '../../../src/modules/webhooks/webhook-schedule.ts';
import { webhooksRepository } from '../../../src/modules/webhooks/webhooks.repository.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import {
  buildWebhookApp,
  createWebhook,
  logOf,
  Receiver,
  sharedDatabase,
  storeMessage,
  TestClock,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

let shared: SharedDatabase;
let t: WebhookTestApp;
let clock: TestClock;
let receiver: Receiver;
let tenant: Tenant;

beforeAll(async () => {
  shared = await sharedDatabase();
  clock = new TestClock();
  // An attempt's timeout long enough that a busy machine's receiver, in this process, still answers a
  // request it drops before it: the network error is then the drop, not the timeout.
  t = await buildWebhookApp(shared, { clock, worker: { attemptTimeoutMs: 1500, releaseStrandedMs: 200 } });
});
afterAll(async () => {
  await t.close();
  await shared.drop();
});
beforeEach(async () => {
  clock.ms = Date.now();
  receiver = await Receiver.start();
  tenant = await createTenant(t.app);
});
afterEach(() => receiver.close());

const pause = (ms = 150) => new Promise((r) => setTimeout(r, ms));

/** Moves the clock and lets the worker look for due deliveries. */
function advance(ms: number) {
  clock.advance(ms);
  t.app.services.webhooks.worker.wake();
}

async function webhookRecord(id: string) {
  return (
    await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${id}`,
      headers: adminHeaders,
    })
  ).json().webhook;
}

async function deliveryState(id: string) {
  return await t.database.db
    .selectFrom('webhook_deliveries')
    .select(['state', 'attempts', 'last_error'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

/** Expects no call until just before `delayMs`, then one more call right after it. */
async function expectNextCallAfter(webhookId: string, delayMs: number, callsSoFar: number) {
  await logOf(t.app, tenant.businessId, webhookId, callsSoFar);
  advance(delayMs - 1000);
  await pause();
  expect(receiver.calls).toHaveLength(callsSoFar);
  advance(1000);
  await receiver.waitFor(callsSoFar + 1);
}

describe('retry rules', () => {
  it('retries 5xx immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then gives up', async () => {
    receiver.respond = () => ({ status: 503, body: 'down' });
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await storeMessage(t, tenant.businessId);
    await receiver.waitFor(1);
    for (const [i, seconds] of RETRY_DELAYS_SECONDS.entries())
      await expectNextCallAfter(webhook.id, seconds * 1000, i + 1);
    const log = await logOf(t.app, tenant.businessId, webhook.id, 8);
    expect(log.map((e) => e.attempt)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
    expect(
      log.every((e) => e.ok === false && e.status_code === 503 && e.error === 'HTTP 503' && e.response_body === 'down'),
    ).toBe(true);
    expect(new Set(receiver.calls.map((c) => c.headers['webhook-id'])).size).toBe(1);
    expect(await deliveryState(String(log[0].id))).toMatchObject({
      state: 'failed',
      attempts: 8,
      last_error: 'gave up after 8 attempts: HTTP 503',
    });
    advance(2 * DAY);
    await pause();
    expect(receiver.calls).toHaveLength(8);
  });

  it('retries network errors, timeouts, 408 and 429', async () => {
    const replies = ['destroy', 'hang', { status: 408 }, { status: 429 }, { status: 200 }] as const;
    receiver.respond = (_c, i) => replies[i];
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await storeMessage(t, tenant.businessId);
    await receiver.waitFor(1);
    for (const [i, seconds] of RETRY_DELAYS_SECONDS.slice(0, 4).entries())
      await expectNextCallAfter(webhook.id, seconds * 1000, i + 1);
    const log = await logOf(t.app, tenant.businessId, webhook.id, 5);
    expect(log.map((e) => [e.status_code, e.ok])).toEqual([
      [200, true],
      [429, false],
      [408, false],
      [null, false],
      [null, false],
    ]);
    expect(log[3].error).toMatch(/^timeout/);
    expect(log[4].error).toMatch(/^network error/);
    expect((await webhookRecord(webhook.id)).failing_since).toBeNull();
  });

  it('ends a hanging attempt at its timeout, a garbage collection during the call notwithstanding', async () => {
    receiver.respond = () => 'hang';
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await storeMessage(t, tenant.businessId);
    await receiver.waitFor(1);
    // The collector the process exposes on request (as --expose-gc would).
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    const [attempt] = await logOf(t.app, tenant.businessId, webhook.id, 1);
    expect(attempt.error).toMatch(/^timeout/);
  });

  it('treats other 4xx and redirects as final, without following the redirect', async () => {
    const target = await Receiver.start();
    try {
      receiver.respond = (_c, i) =>
        i === 0 ? { status: 302, headers: { location: `${target.url}/elsewhere` } } : { status: 422, body: 'bad' };
      const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
      const first = await storeMessage(t, tenant.businessId);
      await storeMessage(t, tenant.businessId, { conversation: first.conversation });
      const log = await logOf(t.app, tenant.businessId, webhook.id, 2);
      expect(log.map((e) => [e.attempt, e.status_code, e.error])).toEqual([
        [1, 422, 'HTTP 422'],
        [1, 302, 'HTTP 302: redirects are not followed'],
      ]);
      advance(DAY);
      await pause();
      expect(receiver.calls).toHaveLength(2);
      expect(target.calls).toHaveLength(0);
      expect((await webhookRecord(webhook.id)).enabled).toBe(true);
    } finally {
      await target.close();
    }
  });

  it('honours Retry-After (seconds and HTTP date)', async () => {
    receiver.respond = (_c, i) =>
      i === 0
        ? { status: 429, headers: { 'retry-after': '120' } }
        : i === 1
          ? { status: 503, headers: { 'retry-after': new Date(clock.now() + 3 * HOUR).toUTCString() } }
          : { status: 200 };
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await storeMessage(t, tenant.businessId);
    await receiver.waitFor(1);
    await expectNextCallAfter(webhook.id, 120_000, 1);
    // 3 h asked, more than the 5 min of the schedule.
    await expectNextCallAfter(webhook.id, 3 * HOUR, 2);
  });

  it('disables the webhook on 410 and stops writing deliveries for it', async () => {
    receiver.respond = () => ({ status: 410 });
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const first = await storeMessage(t, tenant.businessId);
    await logOf(t.app, tenant.businessId, webhook.id, 1);
    expect(await webhookRecord(webhook.id)).toMatchObject({ enabled: false, disabled_reason: 'endpoint_gone' });
    const second = await storeMessage(t, tenant.businessId, { conversation: first.conversation });
    expect(second.queued).toBe(false);
    advance(DAY);
    await pause();
    expect(receiver.calls).toHaveLength(1);
  });

  it('disables a webhook failing without a success for 5 days; a success resets the count', async () => {
    let status = 500;
    receiver.respond = () => ({ status });
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const first = await storeMessage(t, tenant.businessId);
    await logOf(t.app, tenant.businessId, webhook.id, 1);
    const failingSince = (await webhookRecord(webhook.id)).failing_since;
    expect(failingSince).not.toBeNull();
    // Day 3: a success ends the failure run.
    clock.advance(3 * DAY);
    status = 200;
    await storeMessage(t, tenant.businessId, { conversation: first.conversation });
    await waitForRecord(webhook.id, (w) => w.failing_since === null);
    status = 500;
    clock.advance(DAY);
    await storeMessage(t, tenant.businessId);
    await waitForRecord(webhook.id, (w) => w.failing_since !== null);
    // 4 days later: still within 5 days of the new run.
    clock.advance(4 * DAY);
    await storeMessage(t, tenant.businessId);
    await logOf(t.app, tenant.businessId, webhook.id, 5);
    expect((await webhookRecord(webhook.id)).enabled).toBe(true);
    clock.advance(DAY + 1000);
    await storeMessage(t, tenant.businessId);
    await waitForRecord(webhook.id, (w) => w.enabled === false);
    expect(await webhookRecord(webhook.id)).toMatchObject({ enabled: false, disabled_reason: 'failing_5_days' });
    // Its held deliveries go out again once an operator re-enables it.
    const calls = receiver.calls.length;
    status = 200;
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${webhook.id}`,
      headers: adminHeaders,
      payload: { enabled: true },
    });
    expect(res.json().webhook).toMatchObject({
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
    });
    advance(DAY);
    await receiver.waitFor(calls + 1);
  });

  it('keeps deliveries of one conversation in order: a failing first one holds the second until it succeeds', async () => {
    let failFirst = true;
    receiver.respond = (call) => {
      const text = JSON.parse(call.body).payload.text;
      if (text === 'one' && failFirst) {
        failFirst = false;
        return { status: 500 };
      }
      return { status: 200 };
    };
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const one = await storeMessage(t, tenant.businessId, { message: { text: 'one' } });
    await storeMessage(t, tenant.businessId, { conversation: one.conversation, message: { text: 'two' } });
    await storeMessage(t, tenant.businessId, { message: { text: 'other conversation' } });
    await logOf(t.app, tenant.businessId, webhook.id, 2);
    await pause(300);
    const texts = () => receiver.calls.map((c) => JSON.parse(c.body).payload.text);
    expect(texts().sort()).toEqual(['one', 'other conversation']);
    advance(5000);
    await receiver.waitFor(4);
    expect(texts()).toEqual(expect.arrayContaining(['one', 'other conversation']));
    expect(texts().slice(2)).toEqual(['one', 'two']);
  });

  it('holds the backlog behind a failing delivery out of the claim: only the first of each conversation is due, the rest go in order', async () => {
    let failing = true;
    receiver.respond = () => ({ status: failing ? 503 : 200 });
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const first = await storeMessage(t, tenant.businessId, { message: { text: 'm0' } });
    await receiver.waitFor(1);
    for (let i = 1; i < 30; i++)
      await storeMessage(t, tenant.businessId, { conversation: first.conversation, message: { text: `m${i}` } });
    const other = await storeMessage(t, tenant.businessId, { message: { text: 'elsewhere' } });
    await storeMessage(t, tenant.businessId, { conversation: other.conversation, message: { text: 'elsewhere 2' } });
    const rows = () =>
      t.database.db
        .selectFrom('webhook_deliveries')
        .select(['state', 'held'])
        .where('business_id', '=', tenant.businessId)
        .where('webhook_id', '=', webhook.id)
        .execute();
    // What the claim can see: the first of each conversation, never the 29 behind the failing one.
    await receiver.waitFor(2); // m0 and elsewhere, both failing
    await pause();
    expect((await rows()).filter((r) => r.state === 'pending' && !r.held)).toHaveLength(2);
    expect((await rows()).filter((r) => r.held)).toHaveLength(29 + 1);
    failing = false;
    advance(HOUR);
    await receiver.waitFor(2 + 32);
    const texts = receiver.calls
      .map((c) => JSON.parse(c.body).payload.text as string)
      .filter((text) => text.startsWith('m'));
    // m0 was tried before; then m0 again and the rest, in order.
    expect(texts.slice(texts.lastIndexOf('m0'))).toEqual(Array.from({ length: 30 }, (_, i) => `m${i}`));
    await pause();
    expect((await rows()).every((r) => r.state === 'delivered' && !r.held)).toBe(true);
  });

  it('releases a held delivery left with nothing before it (queued while the one before it ended elsewhere)', async () => {
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const one = await storeMessage(t, tenant.businessId, { message: { text: 'one' } });
    await receiver.waitFor(1);
    // As if its queue's first delivery had ended in a transaction that could not see it.
    const stranded = await storeMessage(t, tenant.businessId, {
      conversation: one.conversation,
      message: { text: 'stranded' },
    });
    await receiver.waitFor(2);
    await t.database.db
      .updateTable('webhook_deliveries')
      .set({ state: 'pending', held: true, next_attempt_at: new Date(clock.ms).toISOString() })
      .where('business_id', '=', tenant.businessId)
      .where('message_id', '=', stranded.message.id)
      .execute();
    // This app looks for them every 200 ms (30 s by default).
    const calls = await receiver.waitFor(3);
    expect(JSON.parse(calls[2].body).payload.text).toBe('stranded');
    expect((await logOf(t.app, tenant.businessId, webhook.id, 3)).every((e) => e.ok)).toBe(true);
  });

  it('lets the next delivery of a conversation go once the earlier one is given up', async () => {
    receiver.respond = (call) => (JSON.parse(call.body).payload.text === 'one' ? { status: 400 } : { status: 200 });
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const one = await storeMessage(t, tenant.businessId, { message: { text: 'one' } });
    await storeMessage(t, tenant.businessId, { conversation: one.conversation, message: { text: 'two' } });
    await receiver.waitFor(2);
    expect(receiver.calls.map((c) => JSON.parse(c.body).payload.text)).toEqual(['one', 'two']);
    expect((await logOf(t.app, tenant.businessId, webhook.id, 2)).map((e) => e.ok)).toEqual([true, false]);
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const { webhook, secret: oldSecret } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const rotated = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${webhook.id}/rotate-secret`,
      headers: adminHeaders,
    });
    expect(rotated.statusCode).toBe(200);
    const newSecret = rotated.json().secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    const first = await storeMessage(t, tenant.businessId);
    const [call] = await receiver.waitFor(1);
    expect(String(call.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const headers = call.headers as Record<string, string>;
    expect(() => new Webhook(newSecret).verify(call.body, headers)).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(call.body, headers)).not.toThrow();
    // Newest first: each entry is one secret's signature.
    const [newSig, oldSig] = headers['webhook-signature'].split(' ');
    expect(() => new Webhook(newSecret).verify(call.body, { ...headers, 'webhook-signature': newSig })).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(call.body, { ...headers, 'webhook-signature': newSig })).toThrow();
    expect(() => new Webhook(oldSecret).verify(call.body, { ...headers, 'webhook-signature': oldSig })).not.toThrow();
    clock.advance(DAY + 1000);
    await storeMessage(t, tenant.businessId, { conversation: first.conversation });
    const calls = await receiver.waitFor(2);
    expect(String(calls[1].headers['webhook-signature']).split(' ')).toHaveLength(1);
  });

  it('keeps both secrets encrypted after a rotation, and signs with a secret stored in the clear by an earlier version', async () => {
    const { webhook, secret } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${webhook.id}/rotate-secret`,
      headers: adminHeaders,
    });
    const stored = await t.database.db
      .selectFrom('webhooks')
      .select(['secret', 'previous_secret'])
      .where('id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    expect([stored.secret, stored.previous_secret]).toEqual([
      expect.stringMatching(/^sb1\./),
      expect.stringMatching(/^sb1\./),
    ]);

    await t.database.db
      .updateTable('webhooks')
      .set({ secret, previous_secret: null, previous_secret_expires_at: null })
      .where('id', '=', webhook.id)
      .execute();
    const first = await storeMessage(t, tenant.businessId);
    const [call] = await receiver.waitFor(1);
    expect(() => new Webhook(secret).verify(call.body, call.headers as Record<string, string>)).not.toThrow();

    // Sealed at start, once; a row changed since it was read (a rotation in another process) is left to that writer.
    const legacy = await t.database.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    expect(
      await webhooksRepository.replaceSecretsIf(
        t.database.db,
        { ...legacy, secret: 'whsec_stale' },
        { secret: 'sb1.x', previous_secret: null, headers: {} },
      ),
    ).toBe(false);
    expect((await t.app.services.webhooks.service.sealStored()).sealed).toBeGreaterThanOrEqual(1);
    expect(await t.app.services.webhooks.service.sealStored()).toEqual({ sealed: 0, unopened: 0 });
    const sealed = await t.database.db
      .selectFrom('webhooks')
      .select('secret')
      .where('id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    expect(sealed.secret).toMatch(/^sb1\./);
    await storeMessage(t, tenant.businessId, { conversation: first.conversation });
    const calls = await receiver.waitFor(2);
    expect(() => new Webhook(secret).verify(calls[1].body, calls[1].headers as Record<string, string>)).not.toThrow();
  });

  it('logs an attempt that cannot be signed (a secret no key opens) and retries it by the usual rules', async () => {
    const { webhook, secret } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const foreign = new SecretBox(['a-key-this-service-does-not-have-0123456789'], 'webhook-secrets').seal(secret);
    await t.database.db.updateTable('webhooks').set({ secret: foreign }).where('id', '=', webhook.id).execute();
    await storeMessage(t, tenant.businessId);
    const [entry] = await logOf(t.app, tenant.businessId, webhook.id, 1);
    expect(entry).toMatchObject({
      ok: false,
      status_code: null,
      error: expect.stringMatching(/does not open with SECRET_KEY/),
    });
    expect(receiver.calls).toHaveLength(0);
    // The key is set right (here: the secret sealed with it again): the next attempt delivers.
    await t.database.db
      .updateTable('webhooks')
      .set({ secret: new SecretBox(t.config.secretKeys, 'webhook-secrets').seal(secret) })
      .where('id', '=', webhook.id)
      .execute();
    advance(5_000);
    const [call] = await receiver.waitFor(1);
    expect(() => new Webhook(secret).verify(call.body, call.headers as Record<string, string>)).not.toThrow();
  });

  it('keeps deliveries held by a disabled webhook however old, and makes them once it is enabled again', async () => {
    receiver.respond = () => ({ status: 500 });
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const stored = await storeMessage(t, tenant.businessId);
    await logOf(t.app, tenant.businessId, webhook.id, 1);
    const patch = (enabled: boolean) =>
      t.app.inject({
        method: 'PATCH',
        url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${webhook.id}`,
        headers: adminHeaders,
        payload: { enabled },
      });
    expect((await patch(false)).statusCode).toBe(200);
    clock.advance(31 * DAY);
    await t.app.services.webhooks.service.cleanup();
    const held = await t.database.db
      .selectFrom('webhook_deliveries')
      .select(['state', 'message_id'])
      .where('webhook_id', '=', webhook.id)
      .execute();
    expect(held).toEqual([{ state: 'pending', message_id: stored.message.id }]);
    receiver.respond = () => ({ status: 200, body: 'ok' });
    const before = receiver.calls.length;
    expect((await patch(true)).statusCode).toBe(200);
    const calls = await receiver.waitFor(before + 1);
    expect(JSON.parse(calls.at(-1)!.body).payload.messageId).toBe(stored.message.id);
  });

  it('deletes log entries and finished deliveries after 30 days', async () => {
    const { webhook } = await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await storeMessage(t, tenant.businessId);
    await logOf(t.app, tenant.businessId, webhook.id, 1);
    clock.advance(29 * DAY);
    await t.app.services.webhooks.service.cleanup();
    expect(await logOf(t.app, tenant.businessId, webhook.id, 1)).toHaveLength(1);
    clock.advance(2 * DAY);
    expect(await t.app.services.webhooks.service.cleanup()).toBeGreaterThanOrEqual(2);
    const res = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${webhook.id}/deliveries`,
      headers: adminHeaders,
    });
    expect(res.json().deliveries).toEqual([]);
    expect(
      await t.database.db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', webhook.id).execute(),
    ).toEqual([]);
  });
});

async function waitForRecord(id: string, check: (w: Record<string, unknown>) => boolean) {
  const end = Date.now() + 10_000;
  while (!check(await webhookRecord(id))) {
    if (Date.now() > end) throw new Error('webhook record did not change');
    await pause(20);
  }
}
