import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { webhookDeliveriesRepository } from '../../../src/modules/webhooks/webhook-deliveries.repository.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { engine } from '../../helpers/test-app.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';
import {
  buildWebhookApp,
  createWebhook,
  logOf,
  Receiver,
  sharedDatabase,
  storeMessage,
  TestClock,
  waitUntil,
  type SharedDatabase,
} from './webhook-harness.ts';

let shared: SharedDatabase;
let receiver: Receiver;

beforeEach(async () => {
  shared = await sharedDatabase();
  receiver = await Receiver.start();
});
afterEach(async () => {
  await receiver.close();
  await shared.drop();
});

describe('at-least-once delivery across restarts', () => {
  it('sends again with the same webhook-id after the server stopped during the call', async () => {
    receiver.respond = (_c, i) => (i === 0 ? 'hang' : { status: 200 });
    const first = await buildWebhookApp(shared);
    const tenant = await createTenant(first.app);
    const { webhook } = await createWebhook(first.app, tenant.businessId, { url: receiver.url });
    await storeMessage(first, tenant.businessId);
    await receiver.waitFor(1);
    await first.close();

    const second = await buildWebhookApp(shared);
    try {
      const calls = await receiver.waitFor(2);
      expect(calls[1].headers['webhook-id']).toBe(calls[0].headers['webhook-id']);
      expect(calls[1].body).toBe(calls[0].body);
      const log = await logOf(second.app, tenant.businessId, webhook.id, 2);
      expect(log.map((e) => [e.attempt, e.ok])).toEqual([
        [2, true],
        [1, false],
      ]);
      expect(log[1].error).toMatch(/^interrupted/);
    } finally {
      await second.close();
    }
  });

  it('sends a delivery claimed by a worker that crashed before sending once its lease runs out (at the restart on the embedded engine), same webhook-id', async () => {
    const clock = new TestClock();
    // A process without workers writes the message; a "worker" claims and dies without sending.
    const writer = await buildWebhookApp(shared, { workers: false, clock });
    const tenant = await createTenant(writer.app);
    const { webhook } = await createWebhook(writer.app, tenant.businessId, { url: receiver.url });
    await storeMessage(writer, tenant.businessId);
    const now = clock.now();
    const [claimed] = await webhookDeliveriesRepository.claim(
      writer.database.db,
      new Date(now).toISOString(),
      new Date(now + 60_000).toISOString(),
      10,
    );
    expect(claimed).toBeDefined();
    await writer.close();

    const restarted = await buildWebhookApp(shared, { clock });
    try {
      // One process opens an embedded database: the restart takes over what it left at once
      // (restart-recovery.ts); on PostgreSQL another process may hold it, so its lease runs out.
      if (engine === 'postgres') {
        await new Promise((r) => setTimeout(r, 300));
        expect(receiver.calls).toHaveLength(0);
        clock.advance(61_000);
      } else {
        // The restart ended the lease by the database's clock (a second ago); the test clock,
        // stopped at the test's start, catches up with it, however long the start took.
        clock.ms = Date.now();
      }
      restarted.app.services.webhooks.worker.wake();
      const [call] = await receiver.waitFor(1);
      expect(call.headers['webhook-id']).toBe(claimed.id);
      const log = await logOf(restarted.app, tenant.businessId, webhook.id, 1);
      expect(log[0]).toMatchObject({ id: claimed.id, attempt: 2, ok: true });
    } finally {
      await restarted.close();
    }
  });

  it('two worker processes over one database deliver each message exactly once', async () => {
    const one = await buildWebhookApp(shared, { worker: { concurrency: 4 } });
    const two = await buildWebhookApp(shared, { worker: { concurrency: 4 } });
    try {
      const tenant = await createTenant(one.app);
      const { webhook } = await createWebhook(one.app, tenant.businessId, { url: receiver.url });
      const conversations = [];
      for (let i = 0; i < 10; i++) {
        const contact = await insertContact(one.database.db, tenant.businessId, {
          phone_number: `3460000${String(i).padStart(4, '0')}`,
        });
        conversations.push(await insertConversation(one.database.db, tenant.businessId, contact.id));
      }
      const total = 120;
      for (let i = 0; i < total; i++) {
        await storeMessage(i % 2 === 0 ? one : two, tenant.businessId, {
          conversation: conversations[i % 10],
          message: { text: `m${i}` },
        });
      }
      await receiver.waitFor(total, 20_000);
      await logOf(one.app, tenant.businessId, webhook.id, total, '?limit=200');
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.calls).toHaveLength(total);
      expect(new Set(receiver.calls.map((c) => c.headers['webhook-id'])).size).toBe(total);
      const log = await logOf(one.app, tenant.businessId, webhook.id, total, '?limit=200');
      expect(log).toHaveLength(total);
      expect(log.every((e) => e.attempt === 1 && e.ok === true)).toBe(true);
      // Per conversation, calls arrived in message order.
      const byConversation = new Map<string, number[]>();
      for (const call of receiver.calls) {
        const payload = JSON.parse(call.body).payload;
        const list = byConversation.get(payload.conversationId) ?? [];
        list.push(Number(String(payload.text).slice(1)));
        byConversation.set(payload.conversationId, list);
      }
      for (const list of byConversation.values()) expect(list).toEqual([...list].sort((a, b) => a - b));
      await waitUntil(
        async () =>
          (
            await one.database.db
              .selectFrom('webhook_deliveries')
              .select('id')
              .where('state', '!=', 'delivered')
              .execute()
          ).length === 0,
      );
    } finally {
      await one.close();
      await two.close();
    }
  });
});
