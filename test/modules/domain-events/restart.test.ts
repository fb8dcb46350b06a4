import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/database.ts';
import { messagesCreated } from '../../../src/modules/domain-events/domain-events.writer.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { engine } from '../../helpers/test-app.ts';
import {
  buildWebhookApp,
  createWebhook,
  Receiver,
  sharedDatabase,
  waitUntil,
  type SharedDatabase,
} from '../webhooks/webhook-harness.ts';

// Events committed but not yet handed over survive a stop of the process; and two server processes
// handing events over at once never hand one event twice to a subscriber that writes to the database
// (here the webhook deliveries: one delivery per message and webhook).

let shared: SharedDatabase;

beforeEach(async () => {
  shared = await sharedDatabase();
});
afterEach(async () => {
  await shared.drop();
});

/** Stores `count` messages with their message_created events in one transaction, as inbound does, not dispatched. */
async function storeMessages(
  db: Db,
  businessId: string,
  count: number,
  conversation?: { id: string; contact_id: string; channel: string },
) {
  return db.transaction().execute(async (trx) => {
    if (!conversation) {
      const contact = await insertContact(trx, businessId);
      conversation = await insertConversation(trx, businessId, contact.id);
    }
    await trx.selectFrom('conversations').select('id').where('id', '=', conversation.id).forUpdate().execute();
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await insertMessage(trx, businessId, conversation)).id);
    await messagesCreated(trx, businessId, ids);
    return { ids, conversation };
  });
}

const deliveriesOf = (db: Db, messageIds: string[]) =>
  db
    .selectFrom('webhook_deliveries')
    .select(['message_id', 'webhook_id', 'seq'])
    .where('message_id', 'in', messageIds)
    .orderBy('seq')
    .execute();

describe('domain events across stops and processes', () => {
  it('hands over at the next start what a process committed and stopped before handing over', async () => {
    const receiver = await Receiver.start();
    try {
      const first = await buildWebhookApp(shared, { workers: false });
      const tenant = await createTenant(first.app);
      const { webhook } = await createWebhook(first.app, tenant.businessId, { url: receiver.url });
      // Committed, then the process stops before its dispatch.
      const { ids } = await storeMessages(first.database.db, tenant.businessId, 3);
      await first.close();
      const probe = await shared.open();
      expect(await deliveriesOf(probe.db, ids)).toEqual([]);
      await probe.close();

      const second = await buildWebhookApp(shared);
      try {
        await waitUntil(
          async () => (await deliveriesOf(second.database.db, ids)).length === 3,
          10_000,
          'no deliveries',
        );
        const deliveries = await deliveriesOf(second.database.db, ids);
        expect(deliveries.map((d) => [d.message_id, d.webhook_id])).toEqual(ids.map((id) => [id, webhook.id]));
        const calls = await receiver.waitFor(3);
        expect(calls.map((c) => (JSON.parse(c.body) as { payload: { messageId: string } }).payload.messageId)).toEqual(
          ids,
        );
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
    }
  });

  it.skipIf(engine !== 'postgres')(
    'two processes handing events over at once write each message’s deliveries once, in order per conversation',
    async () => {
      const one = await buildWebhookApp(shared, { workers: false });
      const two = await buildWebhookApp(shared, { workers: false });
      try {
        const tenant = await createTenant(one.app);
        const hooks = [
          await createWebhook(one.app, tenant.businessId, { url: 'http://127.0.0.1:9/one' }),
          await createWebhook(one.app, tenant.businessId, { url: 'http://127.0.0.1:9/two' }),
        ];
        const conversations = await Promise.all(
          [0, 1, 2, 3].map(async () => (await storeMessages(one.database.db, tenant.businessId, 1)).conversation),
        );
        const written: string[][] = conversations.map(() => []);
        let writing = true;
        const dispatching = [one, two].map(async (app) => {
          while (writing) await app.app.services.domainEvents.dispatch();
          await app.app.services.domainEvents.dispatch();
        });
        // 4 conversations x 10 transactions of 1-5 messages, from both processes, while both dispatch.
        await Promise.all(
          conversations.map(async (c, k) => {
            for (let i = 0; i < 10; i++) {
              const app = (i + k) % 2 === 0 ? one : two;
              const { ids } = await storeMessages(app.database.db, tenant.businessId, 1 + ((i + k) % 5), c);
              written[k].push(...ids);
            }
          }),
        );
        writing = false;
        await Promise.all(dispatching);
        const all = written.flat();
        const deliveries = await deliveriesOf(one.database.db, all);
        expect(deliveries).toHaveLength(all.length * hooks.length);
        for (const { webhook } of hooks) {
          const mine = deliveries.filter((d) => d.webhook_id === webhook.id).map((d) => d.message_id);
          expect(new Set(mine).size).toBe(all.length);
          for (const ids of written) expect(mine.filter((id) => ids.includes(id!))).toEqual(ids);
        }
        const pending = await one.database.db.selectFrom('domain_event_pending').select('event_id').execute();
        expect(pending).toEqual([]);
      } finally {
        await one.close();
        await two.close();
      }
    },
  );
});
