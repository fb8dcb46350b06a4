import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { enqueueJob } from '../../src/jobs/outbox.worker.ts';
import { newId } from '../../src/lib/ids.ts';
import { webhookDeliveriesRepository } from '../../src/modules/webhooks/webhook-deliveries.repository.ts';
import { createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildTestApp, engine, testConfig, type TestApp } from '../helpers/test-app.ts';
import { createWebhook } from '../modules/webhooks/webhook-harness.ts';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: false });
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

/**
 * What a run stopped in the middle of its work leaves: a job, a delivery and a key in hand, leases an hour
 * long (ended: no longer held, or taken over and held no more).
 */
async function leftInHand() {
  const db = t.database.db;
  const refId = newId();
  await enqueueJob(db, { businessId: tenant.businessId, kind: 'left-behind', refId });
  await db
    .updateTable('outbox')
    .set({ state: 'running', locked_until: sql<string>`now() + interval '1 hour'` })
    .where('ref_id', '=', refId)
    .execute();
  const { webhook } = await createWebhook(t.app, tenant.businessId, { url: 'http://127.0.0.1:9/left' });
  const deliveryId = newId();
  const at = new Date().toISOString();
  await webhookDeliveriesRepository.insertMany(db, [
    {
      business_id: tenant.businessId,
      id: deliveryId,
      webhook_id: webhook.id,
      event: 'message_created',
      payload: {},
      next_attempt_at: at,
      created_at: at,
      updated_at: at,
    },
  ]);
  await db
    .updateTable('webhook_deliveries')
    .set({ state: 'running', locked_until: sql<string>`now() + interval '1 hour'` })
    .where('id', '=', deliveryId)
    .execute();
  const key = (name: string, status: number | null) => ({
    business_id: tenant.businessId,
    route: 'POST /messages/send',
    key: name,
    request_hash: 'h',
    status_code: status,
    lease_id: newId(),
  });
  await db
    .insertInto('idempotency_keys')
    .values([key(`unanswered-${refId}`, null), key(`answered-${refId}`, 202)])
    .execute();
  return {
    job: () =>
      db
        .selectFrom('outbox')
        .select(sql<boolean>`coalesce(locked_until < now(), true)`.as('ended'))
        .where('ref_id', '=', refId)
        .executeTakeFirstOrThrow(),
    delivery: () =>
      db
        .selectFrom('webhook_deliveries')
        .select(sql<boolean>`coalesce(locked_until < now(), true)`.as('ended'))
        .where('id', '=', deliveryId)
        .executeTakeFirstOrThrow(),
    keys: async () =>
      (await db.selectFrom('idempotency_keys').select('key').where('key', 'like', `%-${refId}`).execute()).map(
        (k) => k.key,
      ),
    refId,
  };
}

it.runIf(engine === 'pglite')(
  'on the embedded engine, a start takes over at once what the previous run left in hand',
  async () => {
    const left = await leftInHand();
    expect((await left.job()).ended).toBe(false);
    // The next run of the service over the same database.
    const next = await buildApp(testConfig({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }), {
      database: t.database,
      logger: false,
    });
    await next.ready();
    await next.close();
    expect((await left.job()).ended).toBe(true);
    expect((await left.delivery()).ended).toBe(true);
    expect(await left.keys()).toEqual([`answered-${left.refId}`]);
  },
);

it.runIf(engine === 'postgres')(
  'on PostgreSQL, where other processes may hold them, a start leaves leases to run out',
  async () => {
    const left = await leftInHand();
    const next = await buildApp(testConfig({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }), {
      database: t.database,
      logger: false,
    });
    await next.ready();
    await next.close();
    expect((await left.job()).ended).toBe(false);
    expect((await left.delivery()).ended).toBe(false);
    expect((await left.keys()).sort()).toEqual([`answered-${left.refId}`, `unanswered-${left.refId}`]);
  },
);
