import type { UserFacingSocketConfig, WAMessage } from 'baileys';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whatsAppWebTransport } from '../../../src/channels/whatsapp-web/whatsapp-web.socket.ts';
import { FakeSocket } from '../../helpers/fake-baileys-socket.ts';
import { awkwardStrings, fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn } from '../dashboard-auth/dashboard-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';

/**
 * A model of a linked WhatsApp Web number: sequences of generated Baileys events (`messages.upsert`
 * of customers' messages of several types, the phone's own `fromMe` messages, group chats and status
 * broadcasts, LID senders with and without the phone number beside them, repeated key ids, malformed
 * messages; `messages.update` and `message-receipt.update` receipts). Emitting never throws; each key
 * id of a person's chat is stored once, outbound for fromMe and inbound otherwise, the first event
 * deciding, under the phone number when WhatsApp gave one; nothing else is stored. fast-check is seeded.
 */

const FUZZ = fuzzOptions(16);
const NUMBER = '15550002222';
const sockets: FakeSocket[] = [];
const latest = () => sockets[sockets.length - 1];

let t: TestApp;
let tenant: Tenant;
let channelId: string;

beforeAll(async () => {
  whatsAppWebTransport.makeSocket = (config: UserFacingSocketConfig) => {
    const socket = new FakeSocket(config.auth);
    sockets.push(socket);
    return socket;
  };
  whatsAppWebTransport.pause = async () => undefined;
  t = await buildTestApp({ POLLER_REFRESH_MS: '100', POLLER_INTERVAL_MS: '100' }, { workers: true });
  tenant = await createTenant(t.app, 'Acme');
  await createUser(t.app, tenant.businessId, { email: 'owner@acme.test', password: 'correct horse', role: 'owner' });
  const owner = await signIn(t.app, 'owner@acme.test', 'correct horse');
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'whatsapp_web',
      identifier: `+${NUMBER}`,
      provider: { kind: 'whatsapp_web', phone_number: NUMBER },
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  channelId = res.json().channel.id;
  const state = async () => (await call(t.app, owner, 'GET', `/channels/${channelId}/link`)).json().state as string;
  await until(async () => (await state()) === 'unlinked');
  expect((await call(t.app, owner, 'POST', `/channels/${channelId}/link`, {})).statusCode).toBe(200);
  await until(() => sockets.length === 1);
  latest().link(NUMBER);
  await until(async () => (await state()) === 'linked');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** The chats a message may be in, and the address its person is stored under (null: no person's chat). */
const chats = [
  { key: { remoteJid: '14155550123@s.whatsapp.net' }, address: '14155550123' },
  { key: { remoteJid: '201234567890123@lid', remoteJidAlt: '14155550124@s.whatsapp.net' }, address: '14155550124' },
  { key: { remoteJid: '201234567890124@lid', senderPn: '14155550125@s.whatsapp.net' }, address: '14155550125' },
  { key: { remoteJid: '209876543210987@lid' }, address: '209876543210987@lid' },
  { key: { remoteJid: '120363000000000000@g.us', participant: '14155550123@s.whatsapp.net' }, address: null },
  { key: { remoteJid: 'status@broadcast', participant: '14155550123@s.whatsapp.net' }, address: null },
];

const text = fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), awkwardStrings);
const event = fc.record({
  kind: fc.constantFrom(
    'text',
    'text',
    'text',
    'extended',
    'extended',
    'location',
    'reaction',
    'protocol',
    'no_content',
    'no_id',
    'update',
    'receipt',
  ),
  id: fc.integer({ min: 0, max: 5 }),
  chat: fc.integer({ min: 0, max: chats.length - 1 }),
  fromMe: fc.boolean(),
  text,
  at: fc.oneof(fc.integer({ min: 1_600_000_000, max: 1_900_000_000 }), fc.constantFrom(0, -1, null, undefined)),
});
type Generated = typeof event extends fc.Arbitrary<infer T> ? T : never;

let run = 0;

/** The message Baileys would hand over for the generated one, with this run's key ids. */
function message(e: Generated, prefix: string): WAMessage {
  const key = { ...chats[e.chat].key, fromMe: e.fromMe, id: e.kind === 'no_id' ? undefined : `${prefix}-${e.id}` };
  const content: Record<string, unknown> = {
    text: { conversation: e.text },
    extended: { extendedTextMessage: { text: e.text, contextInfo: { stanzaId: `${prefix}-0`, isForwarded: true } } },
    location: { locationMessage: { degreesLatitude: 38.7, degreesLongitude: -9.1, name: e.text } },
    reaction: { reactionMessage: { key: { id: `${prefix}-1`, remoteJid: key.remoteJid }, text: '👍' } },
    protocol: { protocolMessage: { type: 0, key: { id: `${prefix}-2` } } },
    no_content: {},
    no_id: { conversation: e.text },
  };
  return {
    key,
    messageTimestamp: e.at ?? undefined,
    pushName: e.text,
    message: e.kind === 'no_content' ? null : (content[e.kind] as WAMessage['message']),
  };
}

const stored = (prefix: string) =>
  t.database.db
    .selectFrom('messages')
    .select(['provider_message_id', 'direction', 'sender_address', 'recipient_address'])
    .where('business_id', '=', tenant.businessId)
    .where('channel_id', '=', channelId)
    .where('provider_message_id', 'like', `${prefix}-%`)
    .execute();

describe('WhatsApp Web events, generated', () => {
  it('never throw, and store each key id of a person once, as the model says', async () => {
    let total = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 2, maxLength: 10 }), async (events) => {
        const prefix = `r${++run}`;
        const model = new Map<string, { direction: string; address: string }>();
        for (const e of events) {
          const socket = latest();
          const chat = chats[e.chat];
          const key = { ...chat.key, fromMe: e.fromMe, id: `${prefix}-${e.id}` };
          if (e.kind === 'update')
            expect(() => socket.ev.emit('messages.update', [{ key, update: { status: 3 } }])).not.toThrow();
          else if (e.kind === 'receipt')
            expect(() =>
              socket.ev.emit('message-receipt.update', [
                { key, receipt: { userJid: chat.key.remoteJid, readTimestamp: e.at ?? undefined } },
              ]),
            ).not.toThrow();
          else {
            expect(() =>
              socket.ev.emit('messages.upsert', { messages: [message(e, prefix)], type: 'notify' }),
            ).not.toThrow();
            const kept = !['protocol', 'no_content', 'no_id'].includes(e.kind) && chat.address !== null;
            if (kept && !model.has(key.id))
              model.set(key.id, { direction: e.fromMe ? 'outbound' : 'inbound', address: chat.address });
          }
        }
        // A last message, stored after all the others (the adapter hands them over in order).
        const end = `${prefix}-end`;
        latest().ev.emit('messages.upsert', {
          messages: [{ key: { ...chats[0].key, fromMe: false, id: end }, message: { conversation: 'end' } }],
          type: 'notify',
        });
        await until(async () => (await stored(prefix)).some((r) => r.provider_message_id === end), 5_000);
        const rows = (await stored(prefix)).filter((r) => r.provider_message_id !== end);
        const got = new Map(
          rows.map((r) => [
            r.provider_message_id!,
            { direction: r.direction, address: r.direction === 'inbound' ? r.sender_address : r.recipient_address },
          ]),
        );
        expect(rows).toHaveLength(got.size);
        expect(got).toEqual(model);
        total += got.size;
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through; the socket is the one linked first.
    expect(total).toBeGreaterThan(FUZZ.numRuns);
    expect(sockets).toHaveLength(1);
  }, 300_000);
});
