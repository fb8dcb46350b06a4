import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerSession } from '../../../src/jobs/worker-session.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { engine } from '../../helpers/test-app.ts';
import {
  buildWebhookApp,
  createWebhook,
  Receiver,
  sharedDatabase,
  storeMessage,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

// On PostgreSQL a process killed while sending webhooks leaves its deliveries running under a
// one-minute lease; its worker session's lock ends with it, so another process sends them again at
// once, and never one whose process is alive.

let shared: SharedDatabase;
let writer: WebhookTestApp;
let receiver: Receiver;

beforeAll(async () => {
  if (engine !== 'postgres') return;
  shared = await sharedDatabase();
  receiver = await Receiver.start();
  // Stores the messages; sends nothing itself.
  writer = await buildWebhookApp(shared, { workers: false });
});
afterAll(async () => {
  await writer?.close();
  await receiver?.close();
  await shared?.drop();
});

describe.runIf(engine === 'postgres')('webhook deliveries of a process that died', () => {
  it('are sent again at once by another process, while a live process keeps its own', async () => {
    const tenant = await createTenant(writer.app, 'Takeover');
    await createWebhook(writer.app, tenant.businessId, { url: `${receiver.url}/hooks` });
    const dead = new WorkerSession({ connect: writer.database.connect!, retryMs: 60_000 });
    const alive = new WorkerSession({ connect: writer.database.connect!, retryMs: 60_000 });
    await dead.start();
    await alive.start();
    const deadId = dead.id()!;
    await dead.stop();
    // Two deliveries in hand under a lease a minute long: one of the process that died, one of a live one.
    const claimedBy = async (owner: number) => {
      const { message } = await storeMessage(writer, tenant.businessId);
      await writer.database.db
        .updateTable('webhook_deliveries')
        .set({
          state: 'running',
          attempts: 1,
          locked_by: owner,
          locked_until: sql<string>`now() + interval '60 seconds'`,
        })
        .where('business_id', '=', tenant.businessId)
        .where('message_id', '=', message.id)
        .execute();
      return message.id;
    };
    const orphan = await claimedBy(deadId);
    const kept = await claimedBy(alive.id()!);

    const survivor = await buildWebhookApp(shared, { worker: { pollMs: 20, sweepMs: 100 } });
    try {
      const started = Date.now();
      const [call] = await receiver.waitFor(1, 10_000);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(JSON.parse(call.body).payload.messageId).toBe(orphan);
      // The live process's delivery waits for its lease, however many sweeps pass.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.calls).toHaveLength(1);
      const state = await writer.database.db
        .selectFrom('webhook_deliveries')
        .select(['message_id', 'state'])
        .where('business_id', '=', tenant.businessId)
        .execute();
      expect(Object.fromEntries(state.map((d) => [d.message_id, d.state]))).toEqual({
        [orphan]: 'delivered',
        [kept]: 'running',
      });
    } finally {
      await survivor.close();
      await alive.stop();
    }
  });
});
