import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { newId } from '../../../src/lib/ids.ts';
import { domainEventsRepository } from '../../../src/modules/domain-events/domain-events.repository.ts';
import { conversationsChanged } from '../../../src/modules/domain-events/domain-events.writer.ts';
import { LiveCatchUp, type CatchUp } from '../../../src/modules/live/live.catch-up.ts';
import { LiveHub } from '../../../src/modules/live/live.hub.ts';
import type { LiveEvent } from '../../../src/modules/live/live.events.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { inboundMessage, statusReceipt } from '../../helpers/fake-graph-api.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { engine } from '../../helpers/test-app.ts';
import { createWhatsAppChannel, postSigned, notificationFor, type TestChannel } from '../inbound/whatsapp-helpers.ts';
import { withWhatsAppChannel, type WhatsAppFixture } from '../inbound/whatsapp-helpers.ts';
import { eventually, recordingSink } from './live-helpers.ts';

// The live stream's hub and its subscriber over the real app and database: what a business's
// open dashboards receive of what is committed (and never another business's), the catch-up of a
// reconnecting client, and the bounds on streams.

let fx: WhatsAppFixture;
let otherBusiness: string;
let otherChannel: TestChannel;

/** The sessions of these streams are made up: the app's check of them stays off (live-http.test.ts tests it). */
const live = { sessionCheckMs: 3_600_000 };

beforeAll(async () => {
  fx = await withWhatsAppChannel({ live });
  otherBusiness = (
    await fx.t.app.inject({
      method: 'POST',
      url: '/admin/v1/businesses',
      headers: adminHeaders,
      payload: { name: 'B' },
    })
  ).json().business.id;
  otherChannel = await createWhatsAppChannel(fx.t.app, otherBusiness);
});
afterAll(async () => {
  await fx.t.close();
});

const db = () => fx.t.database.db;
const business = () => fx.tenant.businessId;
const session = (businessId: string, sessionId = newId()) => ({ sessionId, userId: newId(), businessId });

/** Opens and starts a stream of `businessId` on `hub` (the app's unless given). */
async function openStream(businessId: string, lastEventId?: number, hub: LiveHub = fx.t.app.services.live) {
  const recorder = recordingSink();
  const connection = hub.open(session(businessId), recorder.sink);
  if (typeof connection === 'string') throw new Error(connection);
  await connection.start(lastEventId);
  expect(await eventually(() => recorder.named('ready').length === 1)).toBe(true);
  return { recorder, connection, head: Number(recorder.named('ready')[0].id) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The business's events after `afterId`, as the table holds them. */
async function storedAfter(businessId: string, afterId: number) {
  return domainEventsRepository.ofBusinessAfter(db(), businessId, afterId, 10_000);
}

describe('the live stream', () => {
  it('hands an inbound message to every open stream of its business within a second, and to no other', async () => {
    const [a1, a2, b] = await Promise.all([openStream(business()), openStream(business()), openStream(otherBusiness)]);
    const waId = '5491100002222';
    const res = await fx.notify({
      contacts: [{ waId, name: 'Rita' }],
      messages: [inboundMessage(waId, 'text', { body: 'hi' })],
    });
    // Its events were handed over before the answer.
    const answered = performance.now();
    expect(res.statusCode, res.body).toBe(200);
    const message = await db()
      .selectFrom('messages')
      .select(['id', 'conversation_id', 'contact_id'])
      .where('business_id', '=', business())
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    for (const { recorder } of [a1, a2]) {
      expect(await eventually(() => recorder.events().some((e) => e.subject_id === message.id), 1000)).toBe(true);
      const frame = recorder.frames.find((f) => (f.data as LiveEvent).subject_id === message.id)!;
      expect(frame.at - answered).toBeLessThan(1000);
      expect(frame.id).toBe(String((frame.data as LiveEvent).id));
      expect(frame.data).toEqual({
        id: expect.any(Number),
        type: 'message_created',
        conversation_id: message.conversation_id,
        subject_id: message.id,
        data: { contact_id: message.contact_id, direction: 'inbound', sender_type: 'contact', status: 'RECEIVED' },
        created_at: expect.any(String),
      });
      expect(recorder.events().map((e) => [e.type, e.subject_id])).toEqual([
        ['contact_changed', message.contact_id],
        ['message_created', message.id],
      ]);
    }

    // The other business's message reaches its stream only.
    const other = await postSigned(
      fx.t.app,
      notificationFor(otherChannel, { messages: [inboundMessage('5491100003333', 'text', { body: 'yo' })] }),
      otherChannel.appSecret,
    );
    expect(other.statusCode).toBe(200);
    expect(await eventually(() => b.recorder.events().some((e) => e.type === 'message_created'), 1000)).toBe(true);
    await sleep(200);
    const ofB = new Set((await storedAfter(otherBusiness, 0)).map((e) => e.id));
    expect(b.recorder.events().every((e) => ofB.has(e.id))).toBe(true);
    for (const { recorder } of [a1, a2]) {
      expect(recorder.events()).toHaveLength(2);
      expect(recorder.events().some((e) => ofB.has(e.id))).toBe(false);
    }
    for (const s of [a1, a2, b]) s.connection.end();
  });

  it('hands over status changes, conversation operations and large batches, in order', async () => {
    const { recorder, connection, head } = await openStream(business());
    const contact = await insertContact(db(), business(), { phone_number: '+5491100004444' });
    const conversation = await insertConversation(db(), business(), contact.id);
    const providerId = `wamid.${newId()}`;
    const sent = await insertMessage(
      db(),
      business(),
      { id: conversation.id, contact_id: contact.id, channel: 'whatsapp' },
      {
        direction: 'outbound',
        sender_type: 'api',
        status: 'SENT',
        channel_id: fx.channel.id,
        provider_message_id: providerId,
      },
    );
    expect((await fx.notify({ statuses: [statusReceipt(providerId, 'delivered', '5491100004444')] })).statusCode).toBe(
      200,
    );
    const op = await fx.t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${business()}/conversations/${conversation.id}/manual-control`,
      headers: adminHeaders,
      payload: { active: true },
    });
    expect(op.statusCode).toBe(200);
    // 150 senders in one notification: 300 events, more than one announcement holds.
    const senders = Array.from({ length: 150 }, (_, i) => `54911000${String(10_000 + i)}`);
    const many = await fx.notify({
      contacts: senders.map((waId) => ({ waId, name: `S ${waId}` })),
      messages: senders.map((waId) => inboundMessage(waId, 'text', { body: `from ${waId}` })),
    });
    expect(many.statusCode).toBe(200);
    const stored = await storedAfter(business(), head);
    expect(stored).toHaveLength(302);
    expect(await eventually(() => recorder.events().length >= 302, 3000)).toBe(true);
    await sleep(100);
    expect(recorder.events().map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(recorder.events().slice(0, 2)).toMatchObject([
      { type: 'message_status_changed', subject_id: sent.id, data: { status: 'DELIVERED' } },
      { type: 'conversation_changed', subject_id: conversation.id, data: { change: 'manual_control' } },
    ]);
    connection.end();
  });

  it('catches a reconnecting client up on what its business committed after its last id, then goes on live', async () => {
    const first = await openStream(business());
    first.connection.end();
    expect(first.recorder.closed).toBe(true);
    // Missed while away: the other business's too, which the catch-up leaves out.
    for (const post of [
      () => fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: 'one' })] }),
      () =>
        postSigned(
          fx.t.app,
          notificationFor(otherChannel, { messages: [inboundMessage('5491100003333', 'text', { body: 'x' })] }),
          otherChannel.appSecret,
        ),
      () => fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: 'two' })] }),
    ])
      expect((await post()).statusCode).toBe(200);
    const missed = (await storedAfter(business(), first.head)).map((e) => e.id);
    expect(missed).toHaveLength(2);

    const again = await openStream(business(), first.head);
    const received = again.recorder.events().map((e) => e.id);
    // On PostgreSQL, events of the seconds before the last id come again (a smaller id may commit later).
    expect(received.filter((id) => id > first.head)).toEqual(missed);
    if (engine === 'pglite') expect(received).toEqual(missed);
    const ofBusiness = new Set((await storedAfter(business(), 0)).map((e) => e.id));
    expect(received.every((id) => ofBusiness.has(id))).toBe(true);
    // The catch-up comes before `ready`, whose id is where the next reconnect starts.
    const readyAt = again.recorder.frames.findIndex((f) => f.event === 'ready');
    expect(again.recorder.frames.slice(readyAt + 1)).toEqual([]);
    expect(again.head).toBeGreaterThanOrEqual(missed.at(-1)!);
    expect(again.recorder.frames[readyAt].retry).toBeGreaterThan(0);

    expect(
      (await fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: 'three' })] })).statusCode,
    ).toBe(200);
    expect(await eventually(() => again.recorder.events().length === received.length + 1, 1000)).toBe(true);
    again.connection.end();
  });

  it('sends the events announced during a catch-up after it, each once', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    class SlowCatchUp extends LiveCatchUp {
      override async read(businessId: string, afterId: number | undefined): Promise<CatchUp> {
        await gate;
        return super.read(businessId, afterId);
      }
    }
    const hub = new LiveHub(new SlowCatchUp(db(), { lateCommitMs: 0 }));
    const { head } = await openStream(business());
    const recorder = recordingSink();
    const connection = hub.open(session(business()), recorder.sink);
    if (typeof connection === 'string') throw new Error(connection);
    const started = connection.start(head);
    // Committed and announced before the catch-up reads: in both.
    expect(
      (await fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: 'during' })] })).statusCode,
    ).toBe(200);
    const committed = await storedAfter(business(), head);
    expect(committed).toHaveLength(1);
    const announced: LiveEvent = { ...toLive(committed[0]) };
    hub.publish(business(), [announced]);
    // Announced only (committed after the read, say).
    const later: LiveEvent = { ...announced, id: announced.id + 1_000_000 };
    hub.publish(business(), [later]);
    hub.publish(otherBusiness, [{ ...announced, id: announced.id + 2_000_000 }]);
    expect(recorder.frames).toEqual([]);
    release();
    await started;
    expect(await eventually(() => recorder.frames.length === 3)).toBe(true);
    expect(recorder.frames.map((f) => f.event ?? f.id)).toEqual([String(announced.id), 'ready', String(later.id)]);
    hub.stop();
    expect(recorder.closed).toBe(true);
    expect(hub.size).toBe(0);
  });

  it('catches every stream up when the announcements were interrupted and are heard again', async () => {
    // A hub no subscriber announces to: what reaches its stream comes from the table.
    const hub = new LiveHub(new LiveCatchUp(db(), { lateCommitMs: 0 }));
    const { recorder, head } = await openStream(business(), undefined, hub);
    const conversation = await insertConversation(db(), business(), (await insertContact(db(), business())).id);
    await db()
      .transaction()
      .execute((trx) =>
        conversationsChanged(trx, business(), [{ conversationId: conversation.id, change: 'archive' }]),
      );
    hub.listenState('interrupted');
    expect(recorder.events()).toEqual([]);
    hub.listenState('listening');
    expect(await eventually(() => recorder.events().length === 1)).toBe(true);
    expect(recorder.events()[0]).toMatchObject({ type: 'conversation_changed', subject_id: conversation.id });
    expect(recorder.events()[0].id).toBeGreaterThan(head);
    hub.stop();
  });

  it('ends a stream whose client stops reading, rather than holding its frames', async () => {
    const hub = new LiveHub(new LiveCatchUp(db(), { lateCommitMs: 0 }));
    let stuck = false;
    const recorder = recordingSink({ send: () => (stuck ? new Promise(() => {}) : Promise.resolve()) });
    const connection = hub.open(session(business()), recorder.sink);
    if (typeof connection === 'string') throw new Error(connection);
    await connection.start(undefined);
    expect(await eventually(() => recorder.named('ready').length === 1)).toBe(true);
    stuck = true;
    const event = (id: number): LiveEvent => ({
      id,
      type: 'contact_changed',
      conversation_id: null,
      subject_id: newId(),
      data: {},
      created_at: new Date().toISOString(),
    });
    hub.publish(
      business(),
      Array.from({ length: 1000 }, (_, i) => event(i + 1)),
    );
    expect(recorder.closed).toBe(false);
    hub.publish(business(), [event(1001)]);
    expect(recorder.closed).toBe(true);
    expect(hub.size).toBe(0);
  });

  it('bounds the streams per session and per process, and ends those whose session ended or moved', async () => {
    const hub = new LiveHub(new LiveCatchUp(db(), { lateCommitMs: 0 }), { limits: { perSession: 2, perProcess: 3 } });
    const s1 = session(business());
    const open = (s: ReturnType<typeof session>) => {
      const recorder = recordingSink();
      return { recorder, connection: hub.open(s, recorder.sink) };
    };
    const a = open(s1);
    const b = open(s1);
    expect(open(s1).connection).toBe('session_limit');
    const s2 = session(business());
    const c = open(s2);
    expect(open(session(business())).connection).toBe('process_limit');
    expect(hub.size).toBe(3);
    (b.connection as { end(): void }).end();
    expect(hub.size).toBe(2);
    const d = open(s1);
    expect(typeof d.connection).toBe('object');

    // s1 is still signed in to its business; s2 moved to the other business.
    hub.checkSessionsWith(async (ids) => {
      expect([...ids].sort()).toEqual([s1.sessionId, s2.sessionId].sort());
      return new Map([
        [s1.sessionId, business()],
        [s2.sessionId, otherBusiness],
      ]);
    });
    await hub.checkSessions();
    expect([a, c, d].map((s) => s.recorder.closed)).toEqual([false, true, false]);
    // A stream of a session opened while a check is under way is not judged by it.
    let answer: (live: Map<string, string>) => void = () => {};
    hub.checkSessionsWith(() => new Promise((resolve) => (answer = resolve)));
    const checking = hub.checkSessions();
    const e = open(session(business()));
    answer(new Map([[s1.sessionId, business()]]));
    await checking;
    expect([a, d, e].map((s) => s.recorder.closed)).toEqual([false, false, false]);
    hub.checkSessionsWith(async () => new Map());
    await hub.checkSessions();
    expect([a, d, e].map((s) => s.recorder.closed)).toEqual([true, true, true]);
    expect(hub.size).toBe(0);
  });
});

describe('the catch-up', () => {
  it('tells the client to reload when more was missed than it sends, or its id is unknown', async () => {
    const { head } = await openStream(business());
    for (let i = 0; i < 2; i++)
      expect(
        (await fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: `m${i}` })] })).statusCode,
      ).toBe(200);
    const small = new LiveCatchUp(db(), { limit: 1, lateCommitMs: 0 });
    const newest = Number((await domainEventsRepository.bounds(db())).newest);
    expect(await small.read(business(), head)).toEqual({ reset: 'too_many', head: newest });
    expect(await new LiveCatchUp(db(), { limit: 2, lateCommitMs: 0 }).read(business(), head)).toMatchObject({
      events: [{ type: 'message_created' }, { type: 'message_created' }],
    });
    const { lastDrawn } = await domainEventsRepository.bounds(db());
    expect(await small.read(business(), lastDrawn + 1)).toEqual({ reset: 'unknown', head: newest });
  });

  it('tells the client to reload when events after its last id may have been deleted', async () => {
    const { head } = await openStream(business());
    expect((await fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: 'old' })] })).statusCode).toBe(
      200,
    );
    // The dispatcher's cleanup, days later: every event handed over is deleted.
    await fx.t.app.services.domainEvents.dispatch();
    await domainEventsRepository.deleteHandedOver(db(), new Date(Date.now() + 86_400_000).toISOString(), 100_000);
    const { oldest, lastDrawn } = await domainEventsRepository.bounds(db());
    expect(oldest).toBeNull();
    const reconnect = await openStream(business(), head);
    expect(reconnect.recorder.frames.map((f) => f.event)).toEqual(['reset', 'ready']);
    expect(reconnect.recorder.frames[0]).toMatchObject({ id: String(lastDrawn), data: { reason: 'expired' } });
    // From the position the reset gave, nothing is missing.
    const next = await openStream(business(), reconnect.head);
    expect(next.recorder.frames.map((f) => f.event)).toEqual(['ready']);
    for (const s of [reconnect, next]) s.connection.end();
  });
});

describe.runIf(engine === 'postgres')('two server processes on one database', () => {
  it('a write in one reaches a stream opened on the other', async () => {
    const second = await buildApp(fx.t.config, { database: fx.t.database, logger: false, workers: false, live });
    await second.ready();
    try {
      const { recorder, connection } = await openStream(business(), undefined, second.services.live);
      const res = await fx.notify({ messages: [inboundMessage('5491100002222', 'text', { body: 'across' })] });
      const answered = performance.now();
      expect(res.statusCode).toBe(200);
      expect(await eventually(() => recorder.events().some((e) => e.type === 'message_created'), 1000)).toBe(true);
      expect(recorder.frames.at(-1)!.at - answered).toBeLessThan(1000);
      connection.end();
    } finally {
      await second.close();
    }
  });
});

function toLive(e: Awaited<ReturnType<typeof storedAfter>>[number]): LiveEvent {
  return {
    id: e.id,
    type: e.type,
    conversation_id: e.conversationId,
    subject_id: e.subjectId,
    data: e.data,
    created_at: e.createdAt,
  };
}
