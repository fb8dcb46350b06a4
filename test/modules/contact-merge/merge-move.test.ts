import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/database.ts';
import { sliceSizes } from '../../../src/db/slices.ts';
import { outboxRepository } from '../../../src/jobs/outbox.repository.ts';
import { CONTACT_MERGE_MOVE_JOB } from '../../../src/modules/contact-merge/contact-merge.job.ts';
import { domainEventsRepository } from '../../../src/modules/domain-events/domain-events.repository.ts';
import { messagesRepository } from '../../../src/modules/messages/messages.repository.ts';
import { identityDrift } from '../../helpers/contact-identities.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';
import { movesEnded, movesLeft } from '../../helpers/merges.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { engine } from '../../helpers/test-app.ts';
import { postImport } from '../import/import-helpers.ts';
import {
  buildWebhookApp,
  sharedDatabase,
  type SharedDatabase,
  type WebhookTestApp,
} from '../webhooks/webhook-harness.ts';

// A merge decides in one short transaction and hides the loser; its messages and events then move to
// the survivor a slice at a time (the contact_merge_move job). Readers see the merge whole at once;
// a crash, a stop, a later merge of the survivor or its deletion during the move lose or double no row.

const slice = sliceSizes(engine).mergeRows;

let shared: SharedDatabase;
const apps: WebhookTestApp[] = [];

beforeEach(async () => {
  shared = await sharedDatabase();
});
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  await shared.drop();
});

/** An app over the shared database; without workers unless asked, so the test runs the moves. */
async function open(workers = false) {
  const app = await buildWebhookApp(shared, { workers });
  apps.push(app);
  return app;
}

async function close(app: WebhookTestApp) {
  apps.splice(apps.indexOf(app), 1);
  await app.close();
}

/**
 * A conversation of the contact with `messages` messages and `events` events, written in one
 * statement each (the sizes of several slices).
 */
async function history(
  db: Db,
  businessId: string,
  contactId: string,
  messages: number,
  events = 0,
): Promise<{ conversationId: string; messages: string[]; events: string[] }> {
  const conversation = await insertConversation(db, businessId, contactId);
  const { rows: m } = await sql<{ id: string }>`
    insert into messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, status, text, created_at)
    select ${businessId}, gen_random_uuid(), ${conversation.id}, ${contactId}, 'whatsapp', 'inbound', 'contact', 'RECEIVED',
      'm' || n, timestamptz '2026-01-01' + n * interval '1 second'
    from generate_series(1, ${messages}::int) n
    returning id`.execute(db);
  const { rows: e } = await sql<{ id: string }>`
    insert into events (business_id, id, type, conversation_id, contact_id, channel, actor_type, data, created_at)
    select ${businessId}, gen_random_uuid(), 'conversation_resolved', ${conversation.id}, ${contactId}, 'whatsapp', 'system',
      '{}', timestamptz '2026-01-01' + n * interval '1 second' + interval '1 millisecond'
    from generate_series(1, ${events}::int) n
    returning id`.execute(db);
  return { conversationId: conversation.id, messages: m.map((r) => r.id), events: e.map((r) => r.id) };
}

/** The ids of the rows of `table` that name the contact, sorted. */
async function idsOf(db: Db, table: 'messages' | 'events', businessId: string, contactId: string) {
  const rows = await db
    .selectFrom(table)
    .select('id')
    .where('business_id', '=', businessId)
    .where('contact_id', '=', contactId)
    .execute();
  return rows.map((r) => r.id).sort();
}

const contactRow = (db: Db, businessId: string, id: string) =>
  db
    .selectFrom('contacts')
    .select(['id', 'merged_into'])
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();

const merge = (app: FastifyInstance, tenant: Tenant, survivorId: string, loserId: string) =>
  app.inject({
    method: 'POST',
    url: '/external/v2/contacts/merge',
    headers: tenant.headers,
    payload: { survivor_id: survivorId, loser_id: loserId },
  });

const get = (app: FastifyInstance, tenant: Tenant, url: string) =>
  app.inject({ method: 'GET', url: `/external/v2${url}`, headers: tenant.headers });

/**
 * Runs `slices` slices of the move of `loserId` as a worker does, then stops it as a stopping
 * worker would (its stop signal), leaving the job as a crash would: claimed, under a lease of
 * `leaseSeconds`. Answers the claimed job.
 */
async function runSlices(app: WebhookTestApp, loserId: string, slices: number, leaseSeconds = 1) {
  const db = app.database.db;
  const [job] = await outboxRepository.claim(db, CONTACT_MERGE_MOVE_JOB, 10, leaseSeconds);
  expect(job?.ref_id).toBe(loserId);
  let asked = 0;
  // The worker's stop signal, read before each slice: it says "stopping" from the slice after `slices`.
  const stopping = {
    get aborted() {
      return asked++ >= slices;
    },
  } as AbortSignal;
  const outcome = await app.app.services.contactMerge.moveJobHandler().handle(job, stopping);
  expect(outcome).toEqual({ interrupted: true });
  return job;
}

describe('a merge decided at once, its history moved in slices', () => {
  it('answers before the move; every reader shows the survivor with the whole history, the loser is gone', async () => {
    const app = await open();
    const db = app.database.db;
    const tenant = await createTenant(app.app);
    const other = await createTenant(app.app, 'Other');
    const survivor = await insertContact(db, tenant.businessId, { email: 'stays@x.test' });
    const loser = await insertContact(db, tenant.businessId, { email: 'goes@x.test', phone_number: '4917000000042' });
    const own = await history(db, tenant.businessId, survivor.id, 3, 1);
    const moved = await history(db, tenant.businessId, loser.id, 30, 4);

    const res = await merge(app.app, tenant, survivor.id, loser.id);
    expect(res.statusCode, res.body).toBe(200);
    // Answered with the move still to come.
    expect(await movesLeft(db)).toBe(1);
    expect(await idsOf(db, 'messages', tenant.businessId, loser.id)).toEqual([...moved.messages].sort());
    expect(await contactRow(db, tenant.businessId, loser.id)).toEqual({ id: loser.id, merged_into: survivor.id });

    // The loser is gone for every reader.
    expect((await get(app.app, tenant, `/contacts/${loser.id}`)).statusCode).toBe(404);
    expect((await get(app.app, tenant, `/contacts/${loser.id}/timeline`)).statusCode).toBe(404);
    expect((await get(app.app, tenant, `/contacts/${loser.id}/messages`)).statusCode).toBe(404);
    for (const query of ['email=goes@x.test', 'phone=4917000000042']) {
      const found = await get(app.app, tenant, `/contacts?${query}`);
      expect(
        found.json().results.map((c: { id: string }) => c.id),
        query,
      ).toEqual([survivor.id]);
    }
    for (const [survivorId, loserId] of [
      [survivor.id, loser.id],
      [loser.id, survivor.id],
    ]) {
      const again = await merge(app.app, tenant, survivorId, loserId);
      expect(again.statusCode).toBe(404);
      expect(again.json().error.code).toBe('not_found');
    }
    expect(
      (await app.app.inject({ method: 'DELETE', url: `/external/v2/contacts/${loser.id}`, headers: tenant.headers }))
        .statusCode,
    ).toBe(404);

    // The survivor shows the whole history as its own.
    const timeline = await get(app.app, tenant, `/contacts/${survivor.id}/timeline?limit=200`);
    expect(timeline.statusCode, timeline.body).toBe(200);
    const items = timeline.json().items as { kind: string; id: string; contact_id: string }[];
    expect(
      items
        .filter((i) => i.kind === 'message')
        .map((i) => i.id)
        .sort(),
    ).toEqual([...own.messages, ...moved.messages].sort());
    // The events: both contacts' and the merge's contact_field_changed (a change of email none: none).
    expect(items.filter((i) => i.kind === 'event').length).toBeGreaterThanOrEqual(
      own.events.length + moved.events.length,
    );
    expect(new Set(items.map((i) => i.contact_id))).toEqual(new Set([survivor.id]));
    const messages = await get(app.app, tenant, `/contacts/${survivor.id}/messages?limit=200`);
    expect(messages.statusCode, messages.body).toBe(200);
    expect(messages.json().messages).toHaveLength(33);

    const exported = await get(app.app, tenant, '/messages?since=2025-12-31&until=2026-01-02&limit=500');
    expect(exported.statusCode, exported.body).toBe(200);
    const records = exported.json().messages as { id: string; contact_id: string }[];
    expect(records.map((r) => r.id).sort()).toEqual([...own.messages, ...moved.messages].sort());
    expect(new Set(records.map((r) => r.contact_id))).toEqual(new Set([survivor.id]));
    const events = await get(app.app, tenant, '/events?since=2025-12-31&until=2026-01-02&limit=500');
    expect(new Set((events.json().events as { contact_id: string }[]).map((e) => e.contact_id))).toEqual(
      new Set([survivor.id]),
    );

    // What deleting the survivor would remove counts the loser's rows too.
    expect(await app.app.services.dashboardContacts.deletion(tenant.businessId, survivor.id)).toMatchObject({
      conversations: 2,
      messages: 33,
    });

    // A receipt's domain event for a message not moved yet names the survivor.
    await db
      .transaction()
      .execute((trx) =>
        domainEventsRepository.insertForMessages(trx, tenant.businessId, 'message_status_changed', [
          { id: moved.messages[0], status: 'READ' },
        ]),
      );
    const [statusEvent] = await db
      .selectFrom('domain_events')
      .select('data')
      .where('business_id', '=', tenant.businessId)
      .where('type', '=', 'message_status_changed')
      .execute();
    expect(statusEvent.data).toMatchObject({ contact_id: survivor.id });

    // The loser's inbound messages keep the survivor's service window open.
    const window = { contact_id: survivor.id, channel_id: v7(), channel: 'whatsapp', hours: 24 * 365 * 100 };
    expect(await messagesRepository.inServiceWindows(db, tenant.businessId, [window])).toEqual(
      new Set([`${survivor.id}:${window.channel_id}`]),
    );
    expect(await messagesRepository.serviceWindow(db, tenant.businessId, window)).toMatchObject({ open: true });

    // Another business sees none of it.
    for (const url of [`/contacts/${survivor.id}`, `/contacts/${survivor.id}/timeline`]) {
      expect((await get(app.app, other, url)).statusCode, url).toBe(404);
    }
    expect((await merge(app.app, other, survivor.id, loser.id)).statusCode).toBe(404);

    // The move ends: the rows are the survivor's, the loser is deleted.
    app.app.worker.start();
    await movesEnded(db);
    await app.app.worker.stop();
    expect(await contactRow(db, tenant.businessId, loser.id)).toBeUndefined();
    expect(await idsOf(db, 'messages', tenant.businessId, survivor.id)).toEqual(
      [...own.messages, ...moved.messages].sort(),
    );
    expect(await idsOf(db, 'events', tenant.businessId, loser.id)).toEqual([]);
    expect(await identityDrift(db)).toEqual([]);
  });

  it('finishes a move that a crash cut short, in a new app, with no row lost or moved twice', async () => {
    const first = await open();
    const db = first.database.db;
    const tenant = await createTenant(first.app);
    const survivor = await insertContact(db, tenant.businessId);
    const loser = await insertContact(db, tenant.businessId);
    const own = await history(db, tenant.businessId, survivor.id, 2, 1);
    const moved = await history(db, tenant.businessId, loser.id, 2 * slice + 11, 7);
    expect((await merge(first.app, tenant, survivor.id, loser.id)).statusCode).toBe(200);

    // One slice commits, then the process dies with the job in hand.
    await runSlices(first, loser.id, 1);
    expect((await idsOf(db, 'messages', tenant.businessId, loser.id)).length).toBe(slice + 11);
    await close(first);

    const second = await open(true);
    const after = second.database.db;
    // PGlite: the restart ends the dead run's lease; PostgreSQL: it runs out after a second.
    await movesEnded(after, 30_000);
    expect(await contactRow(after, tenant.businessId, loser.id)).toBeUndefined();
    expect(await idsOf(after, 'messages', tenant.businessId, survivor.id)).toEqual(
      [...own.messages, ...moved.messages].sort(),
    );
    // Each event once (the merge changed no field: it wrote none of its own).
    expect(await idsOf(after, 'events', tenant.businessId, survivor.id)).toEqual(
      [...own.events, ...moved.events].sort(),
    );
    const [job] = await after
      .selectFrom('outbox')
      .select(['state', 'attempts'])
      .where('kind', '=', CONTACT_MERGE_MOVE_JOB)
      .execute();
    // Taken over from the dead run, then claimed again: each counts an attempt.
    expect(job).toEqual({ state: 'done', attempts: 3 });
  });

  it('a stopping server leaves the rest of the move to its next start', async () => {
    const first = await open();
    const db = first.database.db;
    const tenant = await createTenant(first.app);
    const survivor = await insertContact(db, tenant.businessId);
    const loser = await insertContact(db, tenant.businessId);
    const moved = await history(db, tenant.businessId, loser.id, slice + 5, 2);
    expect((await merge(first.app, tenant, survivor.id, loser.id)).statusCode).toBe(200);
    const job = await runSlices(first, loser.id, 1, 120);
    // What the worker does with an interrupted job: due again at once.
    await outboxRepository.release(db, job);
    await close(first);

    const second = await open(true);
    await movesEnded(second.database.db);
    expect(await idsOf(second.database.db, 'messages', tenant.businessId, survivor.id)).toEqual(
      [...moved.messages].sort(),
    );
    expect(await contactRow(second.database.db, tenant.businessId, loser.id)).toBeUndefined();
  });

  it('a chain: A merged into B, then B into C while A moves, ends with everything under C', async () => {
    const app = await open();
    const db = app.database.db;
    const tenant = await createTenant(app.app);
    const [a, b, c] = [
      await insertContact(db, tenant.businessId, { email: 'a@x.test' }),
      await insertContact(db, tenant.businessId, { email: 'b@x.test' }),
      await insertContact(db, tenant.businessId, { email: 'c@x.test' }),
    ];
    const ofA = await history(db, tenant.businessId, a.id, slice + 9, 3);
    const ofB = await history(db, tenant.businessId, b.id, 4, 1);
    const ofC = await history(db, tenant.businessId, c.id, 2, 1);

    expect((await merge(app.app, tenant, b.id, a.id)).statusCode).toBe(200);
    const job = await runSlices(app, a.id, 1, 120);
    await outboxRepository.release(db, job);
    expect((await idsOf(db, 'messages', tenant.businessId, b.id)).length).toBe(4 + slice);

    expect((await merge(app.app, tenant, c.id, b.id)).statusCode).toBe(200);
    // A is repointed: hidden into C now, as B is.
    expect(await contactRow(db, tenant.businessId, a.id)).toEqual({ id: a.id, merged_into: c.id });
    expect(await contactRow(db, tenant.businessId, b.id)).toEqual({ id: b.id, merged_into: c.id });
    for (const gone of [a.id, b.id]) expect((await get(app.app, tenant, `/contacts/${gone}`)).statusCode).toBe(404);
    const all = [...ofA.messages, ...ofB.messages, ...ofC.messages].sort();
    expect(await app.app.services.dashboardContacts.deletion(tenant.businessId, c.id)).toMatchObject({
      conversations: 3,
      messages: all.length,
    });
    for (const email of ['a@x.test', 'b@x.test', 'c@x.test']) {
      const found = await get(app.app, tenant, `/contacts?email=${email}`);
      expect(
        found.json().results.map((r: { id: string }) => r.id),
        email,
      ).toEqual([c.id]);
    }

    app.app.worker.start();
    await movesEnded(db);
    await app.app.worker.stop();
    expect(await contactRow(db, tenant.businessId, a.id)).toBeUndefined();
    expect(await contactRow(db, tenant.businessId, b.id)).toBeUndefined();
    expect(await idsOf(db, 'messages', tenant.businessId, c.id)).toEqual(all);
    expect(await idsOf(db, 'events', tenant.businessId, c.id)).toEqual(
      expect.arrayContaining([...ofA.events, ...ofB.events, ...ofC.events]),
    );
    expect(await identityDrift(db)).toEqual([]);
  });

  it('deleting the survivor during the move deletes the hidden loser with it', async () => {
    const app = await open();
    const db = app.database.db;
    const tenant = await createTenant(app.app);
    const survivor = await insertContact(db, tenant.businessId, { email: 'kept@x.test' });
    const loser = await insertContact(db, tenant.businessId, { email: 'hidden@x.test' });
    await history(db, tenant.businessId, survivor.id, 2, 1);
    await history(db, tenant.businessId, loser.id, slice + 3, 2);
    expect((await merge(app.app, tenant, survivor.id, loser.id)).statusCode).toBe(200);
    const job = await runSlices(app, loser.id, 1, 120);
    await outboxRepository.release(db, job);

    const res = await app.app.inject({
      method: 'DELETE',
      url: `/external/v2/contacts/${survivor.id}`,
      headers: tenant.headers,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await contactRow(db, tenant.businessId, loser.id)).toBeUndefined();
    for (const table of ['messages', 'events', 'conversations'] as const) {
      const left = await db.selectFrom(table).select('id').where('business_id', '=', tenant.businessId).execute();
      expect(left, table).toEqual([]);
    }
    expect((await get(app.app, tenant, '/contacts?email=hidden@x.test')).json().results).toEqual([]);
    expect(await identityDrift(db)).toEqual([]);

    // The move finds its contact gone and ends.
    app.app.worker.start();
    await movesEnded(db);
    await app.app.worker.stop();
  });

  it("lands an import's lines that name a hidden loser on its survivor", async () => {
    const app = await open();
    const db = app.database.db;
    const tenant = await createTenant(app.app);
    const survivor = await insertContact(db, tenant.businessId);
    const loser = await insertContact(db, tenant.businessId);
    const moved = await history(db, tenant.businessId, loser.id, 2, 0);
    expect((await merge(app.app, tenant, survivor.id, loser.id)).statusCode).toBe(200);

    const conversationId = v7();
    const [messageId, eventId, movedEventId] = [v7(), v7(), v7()];
    const res = await postImport(app.app, tenant.businessId, [
      {
        type: 'conversation',
        id: conversationId,
        contact_id: loser.id,
        channel: 'whatsapp',
        created_at: '2026-02-01T00:00:00Z',
      },
      {
        type: 'message',
        id: messageId,
        conversation_id: conversationId,
        direction: 'inbound',
        sender_type: 'contact',
        message_type: 'text',
        text: 'imported',
        status: 'RECEIVED',
        created_at: '2026-02-01T00:00:01Z',
      },
      {
        type: 'event',
        id: eventId,
        contact_id: loser.id,
        event_type: 'contact_field_changed',
        actor_type: 'api',
        data: { source: 'import', changes: [] },
        created_at: '2026-02-01T00:00:02Z',
      },
      {
        type: 'event',
        id: movedEventId,
        conversation_id: moved.conversationId,
        contact_id: loser.id,
        event_type: 'conversation_resolved',
        actor_type: 'system',
        data: {},
        created_at: '2026-02-01T00:00:03Z',
      },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().errors).toEqual([]);
    const conversation = await db
      .selectFrom('conversations')
      .select('contact_id')
      .where('id', '=', conversationId)
      .executeTakeFirstOrThrow();
    expect(conversation.contact_id).toBe(survivor.id);
    const message = await db
      .selectFrom('messages')
      .select('contact_id')
      .where('id', '=', messageId)
      .executeTakeFirstOrThrow();
    expect(message.contact_id).toBe(survivor.id);
    const events = await db
      .selectFrom('events')
      .select(['id', 'contact_id'])
      .where('id', 'in', [eventId, movedEventId])
      .execute();
    expect(events.map((e) => e.contact_id)).toEqual([survivor.id, survivor.id]);
  });
});
