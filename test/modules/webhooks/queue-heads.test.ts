import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { webhookDeliveriesRepository as deliveries } from '../../../src/modules/webhooks/webhook-deliveries.repository.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createWebhook } from './webhook-harness.ts';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: false });
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

it('a delivery queued while the one before it is being delivered is released when that ends, whichever commits first', async () => {
  const db = t.database.db;
  const { webhook } = await createWebhook(t.app, tenant.businessId, { url: 'http://127.0.0.1:9/queue' });
  const contact = await insertContact(db, tenant.businessId, {});
  const conversation = await insertConversation(db, tenant.businessId, contact.id, {});
  const delivery = () => {
    const at = new Date().toISOString();
    return {
      business_id: tenant.businessId,
      id: newId(),
      webhook_id: webhook.id,
      event: 'message_created',
      conversation_id: conversation.id,
      payload: {},
      next_attempt_at: at,
      created_at: at,
      updated_at: at,
    };
  };
  const first = delivery();
  await deliveries.insertMany(db, [first]);
  const [claimed] = await deliveries.claim(
    db,
    new Date().toISOString(),
    new Date(Date.now() + 60_000).toISOString(),
    10,
  );
  expect(claimed.id).toBe(first.id);

  // A message transaction queues the next delivery and stays open while the first one's attempt is
  // recorded as delivered (as the worker's recorder does it) in another transaction.
  const second = delivery();
  let recorded: Promise<void> | undefined;
  await db.transaction().execute(async (trx) => {
    await deliveries.insertMany(trx, [second]);
    recorded = db.transaction().execute(async (end) => {
      await deliveries.lockForEnd(end, [claimed]);
      await deliveries.markDelivered(end, [claimed], new Date().toISOString());
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
  await recorded;
  const row = await db
    .selectFrom('webhook_deliveries')
    .select(['state', 'held'])
    .where('id', '=', second.id)
    .executeTakeFirstOrThrow();
  expect(row).toEqual({ state: 'pending', held: false });
  const [next] = await deliveries.claim(db, new Date().toISOString(), new Date(Date.now() + 60_000).toISOString(), 10);
  expect(next?.id).toBe(second.id);
});
