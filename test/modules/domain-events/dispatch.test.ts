import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../../src/db/database.ts';
import type { DomainEvent, Subscriber } from '../../../src/modules/domain-events/domain-events.types.ts';
import { contactsChanged, conversationsChanged } from '../../../src/modules/domain-events/domain-events.writer.ts';
import { domainEventsRepository } from '../../../src/modules/domain-events/domain-events.repository.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';

// The dispatcher hands every committed event to each subscriber of its type once, in order per
// conversation, whatever order transactions commit in; a failed batch is handed over again.

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  // No background poll: the tests decide when events are handed over.
  t = await buildTestApp({}, { workers: false });
  tenant = await createTenant(t.app);
});
afterAll(async () => {
  await t.close();
});

const db = () => t.database.db;
const dispatcher = () => t.app.services.domainEvents;

/** A subscriber that records what it is handed (and may fail), registered under a fresh name. */
async function recorder(options: { batchSize?: number; fail?: () => boolean; name?: string } = {}) {
  const seen: DomainEvent[] = [];
  const subscriber: Subscriber = {
    name: options.name ?? `recorder-${Math.random().toString(36).slice(2)}`,
    types: ['conversation_changed'],
    batchSize: options.batchSize,
    async handle(events) {
      if (options.fail?.()) throw new Error('subscriber failed');
      seen.push(...events);
    },
  };
  await dispatcher().register(subscriber);
  return seen;
}

async function conversation() {
  const contact = await insertContact(db(), tenant.businessId);
  return insertConversation(db(), tenant.businessId, contact.id);
}

/** Writes a conversation_changed event numbered `n`, holding the conversation's row lock as the services do. */
async function change(trx: Db, conversationId: string, n: number | string) {
  await trx.selectFrom('conversations').select('id').where('id', '=', conversationId).forUpdate().execute();
  await conversationsChanged(trx, tenant.businessId, [{ conversationId, change: 'archive', data: { n } }]);
}

const numbersOf = (seen: DomainEvent[], conversationId: string) =>
  seen.filter((e) => e.conversationId === conversationId).map((e) => e.data.n);

describe('the dispatcher', () => {
  it('hands every event of its types to a subscriber once, in order per conversation, across batches', async () => {
    const seen = await recorder({ batchSize: 3 });
    const conversations = [await conversation(), await conversation(), await conversation()];
    // Conversations written concurrently, each one's events one transaction after another.
    await Promise.all(
      conversations.map(async (c) => {
        for (let n = 0; n < 6; n++)
          await db()
            .transaction()
            .execute((trx) => change(trx, c.id, n));
      }),
    );
    // Events of other types are not this subscriber's.
    await db()
      .transaction()
      .execute((trx) => contactsChanged(trx, tenant.businessId, [conversations[0].contact_id], 'updated'));
    await Promise.all([dispatcher().dispatch(), dispatcher().dispatch(), dispatcher().dispatch()]);
    expect(seen).toHaveLength(18);
    expect(new Set(seen.map((e) => e.id)).size).toBe(18);
    for (const c of conversations) expect(numbersOf(seen, c.id)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(seen.every((e) => e.type === 'conversation_changed' && e.businessId === tenant.businessId)).toBe(true);
    await dispatcher().dispatch();
    expect(seen).toHaveLength(18);
  });

  it('hands over again a batch whose subscriber failed, in the same order', async () => {
    let failures = 2;
    const seen = await recorder({ fail: () => failures-- > 0 });
    const c = await conversation();
    for (let n = 0; n < 4; n++)
      await db()
        .transaction()
        .execute((trx) => change(trx, c.id, n));
    await dispatcher().dispatch();
    await dispatcher().dispatch();
    expect(seen).toEqual([]);
    await dispatcher().dispatch();
    expect(numbersOf(seen, c.id)).toEqual([0, 1, 2, 3]);
  });

  it('deletes old events that no subscriber waits for, and none from the first one still pending', async () => {
    const handed = await conversation();
    for (let n = 0; n < 3; n++)
      await db()
        .transaction()
        .execute((trx) => change(trx, handed.id, n));
    await dispatcher().dispatch();
    // A subscriber that keeps failing still waits for what is written after its registration.
    await recorder({ fail: () => true });
    const waiting = await conversation();
    for (let n = 0; n < 2; n++)
      await db()
        .transaction()
        .execute((trx) => change(trx, waiting.id, n));
    await dispatcher().dispatch();
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await domainEventsRepository.deleteHandedOver(db(), future, 10_000)).toBeGreaterThanOrEqual(3);
    const left = await db().selectFrom('domain_events').select(['conversation_id', 'data']).orderBy('id').execute();
    expect(left.map((e) => [e.conversation_id, e.data.n])).toEqual([
      [waiting.id, 0],
      [waiting.id, 1],
    ]);
  });

  it.skipIf(engine !== 'postgres')(
    'misses no event of a transaction that commits after a later-numbered one was handed over (the outbox trap)',
    async () => {
      const seen = await recorder();
      const [first, second] = [await conversation(), await conversation()];
      let wrote!: () => void;
      let release!: () => void;
      const written = new Promise<void>((resolve) => (wrote = resolve));
      const held = new Promise<void>((resolve) => (release = resolve));
      // Transaction A writes its event (the smaller id) and stays open on its connection...
      const a = db()
        .transaction()
        .execute(async (trx) => {
          await change(trx, first.id, 'a');
          wrote();
          await held;
        });
      await written;
      // ...while transaction B writes a later-numbered event and commits.
      await db()
        .transaction()
        .execute((trx) => change(trx, second.id, 'b'));
      await dispatcher().dispatch();
      expect(seen.map((e) => e.data.n)).toEqual(['b']);
      release();
      await a;
      await dispatcher().dispatch();
      expect(seen.map((e) => e.data.n)).toEqual(['b', 'a']);
      // A's id is the smaller one: a position "after B's id" would have skipped it.
      expect(seen[1].id).toBeLessThan(seen[0].id);
      await dispatcher().dispatch();
      expect(seen).toHaveLength(2);
    },
  );

  it.skipIf(engine !== 'postgres')(
    'lets a commit made while a pass waits for the lock (another process handing over) be handed over by that pass',
    async () => {
      const name = `recorder-${Math.random().toString(36).slice(2)}`;
      const seen = await recorder({ name });
      const [first, second] = [await conversation(), await conversation()];
      await db()
        .transaction()
        .execute((trx) => change(trx, first.id, 1));
      const locks = vi.spyOn(domainEventsRepository, 'lock');
      let locked!: () => void;
      let release!: () => void;
      const taken = new Promise<void>((resolve) => (locked = resolve));
      const held = new Promise<void>((resolve) => (release = resolve));
      // Another process's pass holds the subscriber's row...
      const other = db()
        .transaction()
        .execute(async (trx) => {
          await sql`select name from domain_event_subscribers where name = ${name} for update`.execute(trx);
          locked();
          await held;
        });
      await taken;
      try {
        // ...while this process's pass waits for the lock, and a second commit asks for a pass.
        const waiting = dispatcher().dispatch();
        await new Promise((resolve) => setTimeout(resolve, 100));
        await db()
          .transaction()
          .execute((trx) => change(trx, second.id, 2));
        const joined = dispatcher().dispatch();
        release();
        await other;
        await Promise.all([waiting, joined]);
        expect(seen.map((e) => e.data.n)).toEqual([1, 2]);
        // One pass: the second dispatch waited for the pass under way rather than for one more.
        expect(locks.mock.calls.filter(([, n]) => n === name)).toHaveLength(1);
      } finally {
        locks.mockRestore();
      }
    },
  );
});
