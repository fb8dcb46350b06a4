// The claim of due webhook deliveries over a backlog held behind failing deliveries (one per
// conversation queue): N deliveries in 20 queues, every head failed and waiting; median of 21 claims,
// then one pass of releaseStranded (the worker runs it every 30 s).
// npx tsx bench/webhook-claim.ts  (PGlite) | TEST_ENGINE=postgres TEST_DATABASE_URL=postgres://... npx tsx bench/webhook-claim.ts
import { sql } from 'kysely';
import { buildTestApp } from '../test/helpers/test-app.ts';
import { createTenant } from '../test/helpers/tenants.ts';
import { createWebhook } from '../test/modules/webhooks/webhook-harness.ts';
import { insertContact, insertConversation, insertMessage } from '../test/helpers/factories.ts';
import { webhookDeliveriesRepository as repo } from '../src/modules/webhooks/webhook-deliveries.repository.ts';
import { newId } from '../src/lib/ids.ts';

const N = Number(process.env.N ?? 16000);
const t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: false });
const db = t.database.db;
const tenant = await createTenant(t.app);
const { webhook } = await createWebhook(t.app, tenant.businessId, { url: 'http://127.0.0.1:9/h' });
const contact = await insertContact(db, tenant.businessId, {});
const queues = 20;
const convs: Awaited<ReturnType<typeof insertConversation>>[] = [];
for (let q = 0; q < queues; q++) convs.push(await insertConversation(db, tenant.businessId, contact.id, {}));
const msg = await insertMessage(db, tenant.businessId, convs[0], {});
const at = new Date(Date.now() - 1000).toISOString();
for (let i = 0; i < N; i += 1000) {
  await db.transaction().execute((trx) =>
    repo.insertMany(
      trx,
      Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({
        business_id: tenant.businessId,
        id: newId(),
        webhook_id: webhook.id,
        event: 'message_created',
        message_id: msg.id,
        conversation_id: convs[(i + k) % queues].id,
        payload: {},
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      })),
    ),
  );
}
// Every head fails and waits an hour.
const claimed = await repo.claim(db, new Date().toISOString(), new Date(Date.now() + 60_000).toISOString(), 100);
for (const c of claimed)
  await repo.finish(
    db,
    c,
    { state: 'pending', error: 'x', nextAttemptAt: new Date(Date.now() + 3600_000).toISOString() },
    new Date().toISOString(),
  );
await sql`analyze webhook_deliveries`.execute(db);
const times: number[] = [];
for (let r = 0; r < 21; r++) {
  const s = performance.now();
  const got = await repo.claim(db, new Date().toISOString(), new Date(Date.now() + 60_000).toISOString(), 100);
  times.push(performance.now() - s);
  if (got.length) throw new Error('claimed ' + got.length);
}
times.sort((a, b) => a - b);
// The worker's pass every 30 s over the queues for held deliveries with nothing before them.
const releaseStarted = performance.now();
const released = await repo.releaseStranded(db);
const releaseMs = performance.now() - releaseStarted;
console.log(
  JSON.stringify({
    engine: process.env.TEST_ENGINE ?? 'pglite',
    backlog: N,
    queues,
    heads: claimed.length,
    claimMedianMs: +times[10].toFixed(2),
    claimMaxMs: +times[20].toFixed(2),
    released,
    releaseStrandedMs: +releaseMs.toFixed(1),
  }),
);
await t.close();
