import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../../helpers/fake-graph-api.ts';
import {
  outgoingMessageEvent,
  signedHubSpotWebhook,
  startFakeHubSpotApi,
  type FakeHubSpotApi,
} from '../../helpers/fake-hubspot-api.ts';
import { awkwardStrings, fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { createChannel, newPhone, until, type TestChannel } from '../sending/sending.fixtures.ts';

/**
 * A model of HubSpot's webhook: sequences of generated events (replies written in HubSpot, for the
 * business's conversations, another business's, unknown threads and threads that are no
 * conversation id; other event types; replies that are not outgoing; bodies that are no event;
 * wrong signatures) with repeated HubSpot message ids and awkward or wrong-typed text. A signed event
 * answers 200, a body that is no event 400 and a wrong signature 401 (never a 5xx); each HubSpot
 * message id with text, for one of the business's conversations, is relayed once, as one outbound
 * message through the conversation's channel; nothing else is. fast-check is seeded.
 */

const FUZZ = fuzzOptions(16);
const WEBHOOK = '/channels/hubspot/webhook';
const CLIENT_SECRET = 'hubspot-client-secret-0123456789';
const hub = { channelId: '4242', accountId: '91001' };

let t: TestApp;
let graph: FakeGraphApi;
let hubspot: FakeHubSpotApi;
let tenant: Tenant;
let other: Tenant;
/** The threads a reply may name: two conversations of the business, one of another, two that are none. */
let threads: string[];
let ours: Set<string>;

/** A customer's WhatsApp message to the channel, as Meta posts it; answers its conversation. */
async function customerWrites(channel: TestChannel) {
  const message = inboundMessage(newPhone(), 'text', { body: 'Hello' });
  const body = metaNotification({ phoneNumberId: channel.phoneNumberId, messages: [message] });
  const { payload, headers } = signedNotification(body, 'app-secret');
  const res = await t.app.inject({ method: 'POST', url: '/channels/whatsapp_cloud/webhook', payload, headers });
  expect(res.statusCode, res.body).toBe(200);
  const row = await t.database.db
    .selectFrom('messages')
    .select('conversation_id')
    .where('provider_message_id', '=', message.id as string)
    .executeTakeFirstOrThrow();
  return row.conversation_id;
}

beforeAll(async () => {
  graph = await startFakeGraphApi();
  hubspot = await startFakeHubSpotApi();
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  const whatsapp = await createChannel(t.app, tenant, graph);
  const otherWhatsapp = await createChannel(t.app, other, graph);
  const created = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'hubspot_chat',
      identifier: hub.accountId,
      provider: {
        kind: 'hubspot',
        channel_id: hub.channelId,
        channel_account_id: hub.accountId,
        access_token: hubspot.accessToken,
        client_secret: CLIENT_SECRET,
        api_base_url: hubspot.baseUrl,
      },
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  const a = await customerWrites(whatsapp);
  const b = await customerWrites(whatsapp);
  const theirs = await customerWrites(otherWhatsapp);
  ours = new Set([a, b]);
  threads = [a, b, theirs, '0190a6f8-0000-7000-8000-000000000000', 'thread-1'];
});
afterAll(async () => {
  await t?.close();
  await graph?.close();
  await hubspot?.close();
});

const post = (body: unknown, secret = CLIENT_SECRET) => {
  const { payload, headers } = signedHubSpotWebhook(`${PUBLIC_URL}${WEBHOOK}`, body, secret);
  return t.app.inject({ method: 'POST', url: WEBHOOK, payload, headers });
};

const anything = fc.jsonValue({ maxDepth: 2 });
const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
  { weight: 2, arbitrary: awkwardStrings },
  { weight: 1, arbitrary: fc.constantFrom('', '   ', '\n') },
  { weight: 1, arbitrary: anything },
);
const event = fc.record({
  kind: fc.constantFrom(
    'reply',
    'reply',
    'reply',
    'reply',
    'reply',
    'reply',
    'incoming',
    'other_type',
    'no_event',
    'bad_id',
    'forged',
  ),
  // A HubSpot message belongs to one thread: the id decides it, so a repeated id is a redelivery.
  id: fc.integer({ min: 0, max: 7 }),
  text,
  junk: anything,
});
type Generated = typeof event extends fc.Arbitrary<infer T> ? T : never;

let run = 0;

/** The text as the service keeps what a webhook posts: without NUL characters, lone surrogates replaced. */
const stored = (text: string) => text.replaceAll('\0', '').toWellFormed();

function wire(e: Generated, prefix: string): Record<string, unknown> {
  const base = outgoingMessageEvent({
    channelId: hub.channelId,
    channelAccountId: hub.accountId,
    threadId: threads[e.id % threads.length],
    text: '',
    messageId: `${prefix}-${e.id}`,
  });
  const message = { ...(base.message as Record<string, unknown>), text: e.text };
  switch (e.kind) {
    case 'reply':
    case 'forged':
      return { ...base, message };
    case 'incoming':
      return { ...base, message: { ...message, direction: 'INCOMING' } };
    case 'other_type':
      return { type: 'CHANNEL_ACCOUNT_CREATED', portalId: '1', channelId: hub.channelId, junk: e.junk };
    case 'bad_id':
      return { ...base, message: { ...message, id: e.id } };
    default:
      return { portalId: '1', junk: e.junk, message };
  }
}

/** The relayed messages of the business with this run's keys, by key. */
async function relayed(prefix: string) {
  const rows = await t.database.db
    .selectFrom('messages')
    .select(['conversation_id', 'direction', 'metadata', 'business_id'])
    .where('direction', '=', 'outbound')
    .where('business_id', 'in', [tenant.businessId, other.businessId])
    .execute();
  return rows.filter((r) => ((r.metadata as { relay_key?: string }).relay_key ?? '').startsWith(`${prefix}-`));
}

describe('HubSpot replies, generated', () => {
  it('are answered 200 (400 when no event, 401 forged) and relay each HubSpot message id once, as the model says', async () => {
    let total = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 2, maxLength: 12 }), async (events) => {
        const prefix = `r${++run}`;
        const model = new Map<string, string>();
        for (const e of events) {
          const res = await post(wire(e, prefix), e.kind === 'forged' ? 'not-the-secret' : CLIENT_SECRET);
          const expected = e.kind === 'forged' ? 401 : e.kind === 'no_event' || e.kind === 'bad_id' ? 400 : 200;
          expect(res.statusCode, res.body).toBe(expected);
          const thread = threads[e.id % threads.length];
          const key = `${prefix}-${e.id}`;
          // A reply with text, for one of the business's conversations, goes once.
          if (e.kind !== 'reply' || typeof e.text !== 'string' || !ours.has(thread)) continue;
          if (stored(e.text).trim() !== '' && !model.has(key)) model.set(key, thread);
        }
        const rows = await relayed(prefix);
        const sent = new Map(
          rows.map((r) => [(r.metadata as { relay_key: string }).relay_key, r.conversation_id] as const),
        );
        expect(rows).toHaveLength(sent.size);
        expect(sent).toEqual(model);
        expect(rows.every((r) => r.business_id === tenant.businessId)).toBe(true);
        total += sent.size;
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through.
    expect(total).toBeGreaterThan(FUZZ.numRuns / 2);
    // Each relayed message went out through WhatsApp once.
    await until(() => graph.sends().length >= total);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(graph.sends()).toHaveLength(total);
  }, 300_000);
});
