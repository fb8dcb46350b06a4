import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createChannel, inboundContact, messageRow, newPhone, settled, type TestChannel } from './sending.fixtures.ts';

let t: TestApp;
let fake: FakeGraphApi;
let tenant: Tenant;
let other: Tenant;
let channel: TestChannel;
let otherChannel: TestChannel;

beforeAll(async () => {
  fake = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  channel = await createChannel(t.app, tenant, fake);
  otherChannel = await createChannel(t.app, other, fake);
});
afterAll(async () => {
  await t.close();
  await fake.close();
});
beforeEach(() => fake.reset());

// Sends of earlier tests may still reach the fake, so assertions look at one recipient's requests.
const sendsTo = (phone: string) => fake.sends().filter((r) => (r.body as { to?: string }).to === phone);
const send = (payload: unknown, headers = tenant.headers) =>
  t.app.inject({ method: 'POST', url: '/external/v2/messages/send', headers, payload: payload as object });
const base = (to: string, extra: Record<string, unknown> = {}) => ({
  to,
  from: 'whatsapp',
  type: 'text',
  content: { text: 'Hello there' },
  channel_uuid: channel.id,
  ...extra,
});

describe('POST /messages/send', () => {
  it('sends a text within the 24-hour window: exact Graph body, message row, status', async () => {
    const { phone, contact, conversation } = await inboundContact(t, tenant, channel, 23);
    const res = await send(base(`+${phone}`));
    expect(res.statusCode).toBe(200);
    const { message } = res.json();
    expect(message.status).toBe('enqueued');
    const row = await settled(t, message.uuid);
    expect(sendsTo(phone)).toHaveLength(1);
    const request = sendsTo(phone)[0];
    expect(request.path).toBe(`/v21.0/${channel.phoneNumberId}/messages`);
    expect(request.headers.authorization).toBe(`Bearer ${fake.accessToken}`);
    expect(request.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: phone,
      type: 'text',
      biz_opaque_callback_data: message.uuid,
      text: { body: 'Hello there', preview_url: false },
    });
    expect(row).toMatchObject({
      status: 'SENT',
      direction: 'outbound',
      sender_type: 'api',
      channel_id: channel.id,
      contact_id: contact.id,
      conversation_id: conversation.id,
      recipient_address: phone,
      sender_address: channel.identifier,
      type: 'text',
      text: 'Hello there',
      error: null,
      send_attempts: 1,
    });
    expect(row.provider_message_id).toMatch(/^wamid\./);
    expect(row.status_at).not.toBeNull();
    const conv = await t.database.db
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    expect(conv.message_count).toBe(2);
    expect(conv.last_message_at).toBe(row.created_at);
  });

  it.each([
    [
      'image',
      { url: 'https://cdn.example.com/a.jpg', caption: 'Look' },
      { link: 'https://cdn.example.com/a.jpg', caption: 'Look' },
    ],
    [
      'video',
      { url: 'https://cdn.example.com/a.mp4', caption: 'Watch' },
      { link: 'https://cdn.example.com/a.mp4', caption: 'Watch' },
    ],
    ['audio', { url: 'https://cdn.example.com/a.ogg' }, { link: 'https://cdn.example.com/a.ogg' }],
    [
      'document',
      { url: 'https://cdn.example.com/a.pdf', caption: 'Invoice', filename: 'invoice.pdf' },
      { link: 'https://cdn.example.com/a.pdf', caption: 'Invoice', filename: 'invoice.pdf' },
    ],
    ['sticker', { url: 'https://cdn.example.com/a.webp' }, { link: 'https://cdn.example.com/a.webp' }],
  ])('sends %s by URL with the exact Graph body', async (type, content, graph) => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const res = await send(base(phone, { type, content }));
    expect(res.statusCode).toBe(200);
    const row = await settled(t, res.json().message.uuid);
    expect(row.status).toBe('SENT');
    expect(row.type).toBe(type);
    expect(sendsTo(phone).map((r) => r.body)).toEqual([
      {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: phone,
        type,
        biz_opaque_callback_data: row.id,
        [type]: graph,
      },
    ]);
  });

  it('finds the contact by a country variant of its phone (549 / 54) instead of creating one', async () => {
    const { contact } = await inboundContact(t, tenant, channel, 2, '5491122334455');
    const res = await send(base('541122334455', { fields: 'contact' }));
    expect(res.statusCode).toBe(200);
    expect(res.json().contact.uuid).toBe(contact.id);
  });

  it('refuses free-form outside the 24-hour window (template_required), and for a new contact', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 25);
    const res = await send(base(phone));
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('template_required');
    const fresh = newPhone();
    const res2 = await send(base(fresh));
    expect(res2.json().error.code).toBe('template_required');
    // Nothing was stored: no contact for the refused number, nothing sent.
    const contacts = await t.database.db
      .selectFrom('contacts')
      .select('id')
      .where('phone_number', '=', fresh)
      .execute();
    expect(contacts).toHaveLength(0);
    expect([...sendsTo(phone), ...sendsTo(fresh)]).toHaveLength(0);
  });

  it('counts only inbound messages of that channel for the window', async () => {
    const second = await createChannel(t.app, tenant, fake);
    const { phone } = await inboundContact(t, tenant, second, 1);
    const res = await send(base(phone));
    expect(res.json().error.code).toBe('template_required');
    expect((await send(base(phone, { channel_uuid: second.id }))).statusCode).toBe(200);
  });

  it('returns the contact (camelCase) and conversation with fields=contact,conversation', async () => {
    const { phone, contact, conversation } = await inboundContact(t, tenant, channel, 3);
    const res = await send(base(phone, { fields: 'contact,conversation' }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.contact).toMatchObject({
      uuid: contact.id,
      phoneNumber: `+${phone}`,
      name: 'Ada Lovelace',
      assignedUser: null,
      conversationHref: `http://dashboard.test/dashboard/conversations/${conversation.id}`,
    });
    expect(body.conversation).toMatchObject({
      id: conversation.id,
      platform: 'whatsapp',
      channel_id: channel.id,
      message_count: 2,
      manual_control: false,
      closed_at: null,
    });
    const plain = await send(base(phone));
    expect(Object.keys(plain.json())).toEqual(['message']);
  });

  it('bot_end sets manual control with manual_control_activated; bot_start releases it; no event without a change', async () => {
    const { phone, conversation } = await inboundContact(t, tenant, channel, 1);
    const events = () =>
      t.database.db
        .selectFrom('events')
        .selectAll()
        .where('conversation_id', '=', conversation.id)
        .orderBy('id')
        .execute();
    const end = await send(base(phone, { bot_status: 'bot_end', fields: 'conversation' }));
    expect(end.json().conversation.manual_control).toBe(true);
    await send(base(phone, { bot_status: 'bot_end' }));
    const start = await send(base(phone, { bot_status: 'bot_start', fields: 'conversation' }));
    expect(start.json().conversation.manual_control).toBe(false);
    const written = await events();
    expect(written.map((e) => [e.type, e.actor_type, e.data])).toEqual([
      ['manual_control_activated', 'api', { reason: 'api' }],
      ['manual_control_released', 'api', { reason: 'api' }],
    ]);
  });

  it('bot_start on a pinned conversation removes the pin with its event, as the operator API does', async () => {
    const { phone, conversation } = await inboundContact(t, tenant, channel, 1);
    const pin = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/conversations/${conversation.id}/manual-control`,
      headers: adminHeaders,
      payload: { locked: true },
    });
    expect(pin.statusCode).toBe(200);
    expect((await send(base(phone, { bot_status: 'bot_start' }))).statusCode).toBe(200);
    const row = await t.database.db
      .selectFrom('conversations')
      .select(['manual_control', 'manual_control_locked'])
      .where('id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ manual_control: false, manual_control_locked: false });
    const written = await t.database.db
      .selectFrom('events')
      .select(['type', 'actor_type'])
      .where('conversation_id', '=', conversation.id)
      .orderBy('id')
      .execute();
    expect(written.map((e) => `${e.type}:${e.actor_type}`)).toEqual([
      'manual_control_activated:system',
      'manual_control_locked:system',
      'manual_control_unlocked:api',
      'manual_control_released:api',
    ]);
  });

  it('assigns the conversation to a user and a team; unknown ones answer 400', async () => {
    const { phone, conversation } = await inboundContact(t, tenant, channel, 1);
    const user = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/users`,
      headers: adminHeaders,
      payload: { email: 'Grace@acme.test', name: 'Grace' },
    });
    const team = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/teams`,
      headers: adminHeaders,
      payload: { name: 'Support' },
    });
    const teamId = team.json().team.id as string;
    const res = await send(
      base(phone, { assigned_user: 'grace@ACME.test', team_uuid: teamId, fields: 'conversation' }),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json().conversation).toMatchObject({ assigned_user: 'Grace@acme.test', team_uuid: teamId });
    const row = await t.database.db
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    expect(row.assigned_user_id).toBe(user.json().user.id);

    const unknownUser = await send(base(phone, { assigned_user: 'nobody@acme.test' }));
    expect(unknownUser.statusCode).toBe(400);
    expect(unknownUser.json().error.details).toEqual([{ path: '/assigned_user' }]);
    const otherTeam = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${other.businessId}/teams`,
      headers: adminHeaders,
      payload: { name: 'Theirs' },
    });
    const unknownTeam = await send(base(phone, { team_uuid: otherTeam.json().team.id }));
    expect(unknownTeam.statusCode).toBe(400);
    expect(unknownTeam.json().error.details).toEqual([{ path: '/team_uuid' }]);
  });

  it('refuses an opted-out contact with blocked unless optin_contact records the opt-in', async () => {
    const { phone, contact } = await inboundContact(t, tenant, channel, 1);
    await t.database.db
      .updateTable('contacts')
      .set({ collected_data: JSON.stringify({ opted_out: true }) })
      .where('id', '=', contact.id)
      .execute();
    const refused = await send(base(phone));
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.code).toBe('blocked');
    const accepted = await send(base(phone, { optin_contact: true }));
    expect(accepted.statusCode).toBe(200);
    const row = await t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', contact.id)
      .executeTakeFirstOrThrow();
    expect(row.collected_data).toMatchObject({ opted_out: false, whatsapp_opt_in: true });
    expect(typeof row.collected_data.whatsapp_opt_in_at).toBe('string');
    const event = await t.database.db
      .selectFrom('events')
      .selectAll()
      .where('contact_id', '=', contact.id)
      .where('type', '=', 'contact_field_changed')
      .executeTakeFirstOrThrow();
    expect(event.data).toMatchObject({
      source: 'api',
      changes: [
        { field: 'collected_data.whatsapp_opt_in', custom: false, from: null, to: true },
        { field: 'collected_data.opted_out', custom: false, from: true, to: false },
      ],
    });
    expect((await send(base(phone))).statusCode).toBe(200);
  });

  it('stores metadata within its limits and refuses more', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`.padEnd(50, 'x'), 'v'.repeat(500)]));
    const ok = await send(base(phone, { metadata: ten }));
    expect(ok.statusCode).toBe(200);
    expect((await messageRow(t, ok.json().message.uuid)).metadata).toEqual(ten);
    const eleven = { ...ten, extra: 'v' };
    expect((await send(base(phone, { metadata: eleven }))).statusCode).toBe(400);
    expect((await send(base(phone, { metadata: { ['k'.repeat(51)]: 'v' } }))).statusCode).toBe(400);
    expect((await send(base(phone, { metadata: { '': 'v' } }))).statusCode).toBe(400);
    // Characters, not UTF-16 units: 50 emoji make a key of 50 characters.
    expect((await send(base(phone, { metadata: { ['😀'.repeat(50)]: '😀'.repeat(500) } }))).statusCode).toBe(200);
    expect((await send(base(phone, { metadata: { ['😀'.repeat(51)]: 'v' } }))).statusCode).toBe(400);
    expect((await send(base(phone, { metadata: { k: 'v'.repeat(501) } }))).statusCode).toBe(400);
    expect((await send(base(phone, { metadata: { k: 1 } }))).statusCode).toBe(400);
  });

  it('answers 404 for a channel of another business or an unknown one', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const res = await send(base(phone, { channel_uuid: otherChannel.id }));
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
    expect((await send(base(phone, { channel_uuid: '01900000-0000-7000-8000-000000000000' }))).statusCode).toBe(404);
  });

  it.each([
    ['missing to', { to: undefined }],
    ['an unknown field', { extra: 1 }],
    ['a wrong type', { type: 'location' }],
    ['a number as text', { content: { text: 5 } }],
    ['an unknown content field', { content: { text: 'a', body: 'b' } }],
    ['text without content.text', { content: {} }],
    ['a text with a url', { content: { text: 'a', url: 'https://x.test/a' } }],
    ['an image without url', { type: 'image', content: { caption: 'x' } }],
    ['an image with text', { type: 'image', content: { url: 'https://x.test/a', text: 'a' } }],
    ['a caption on audio', { type: 'audio', content: { url: 'https://x.test/a', caption: 'a' } }],
    ['a filename on an image', { type: 'image', content: { url: 'https://x.test/a', filename: 'a.png' } }],
    ['a non-http url', { type: 'image', content: { url: 'ftp://x.test/a' } }],
    ['an over-long text', { content: { text: 'x'.repeat(4097) } }],
    ['from not the channel type', { from: 'instagram' }],
    ['a to that is no phone', { to: 'not-a-phone' }],
    ['a channel_uuid that is no uuid', { channel_uuid: 'abc' }],
    [
      'template_uuid on an image',
      { type: 'image', content: { url: 'https://x.test/a' }, template_uuid: '01900000-0000-7000-8000-000000000000' },
    ],
    ['template_values without template_uuid', { template_values: ['a'] }],
    ['a template without template_uuid', { type: 'template', content: {} }],
    ['unknown fields values', { fields: 'contact,messages' }],
    ['an unknown bot_status', { bot_status: 'bot_pause' }],
    ['optin_contact as a string', { optin_contact: 'yes' }],
  ])('answers 400 for %s', async (_name, change) => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const payload: Record<string, unknown> = { ...base(phone), ...change };
    for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key];
    const res = await send(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers an unknown type or bot_status with one detail listing the allowed values', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const types = ['text', 'image', 'audio', 'video', 'document', 'sticker', 'template'];
    for (const type of ['location', 5]) {
      const res = await send(base(phone, { type }));
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([
        {
          location: 'body',
          path: '/type',
          message: `must be one of ${types.map((v) => `"${v}"`).join(', ')}`,
          allowed: types,
        },
      ]);
    }
    const bot = await send(base(phone, { bot_status: 'bot_pause' }));
    expect(bot.json().error.details).toEqual([
      {
        location: 'body',
        path: '/bot_status',
        message: 'must be one of "bot_start", "bot_end"',
        allowed: ['bot_start', 'bot_end'],
      },
    ]);
  });

  it('answers 400 for malformed JSON and 401 without a key', async () => {
    const bad = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: '{"to":',
    });
    expect(bad.statusCode).toBe(400);
    expect((await send(base(newPhone()), { 'x-api-key': 'mk_live_nope' })).statusCode).toBe(401);
  });

  it('replays a send with the same Idempotency-Key instead of sending twice', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const headers = { ...tenant.headers, 'idempotency-key': `send-${phone}` };
    const first = await send(base(phone), headers);
    const second = await send(base(phone), headers);
    expect(second.statusCode).toBe(200);
    expect(second.json()).toEqual(first.json());
    const count = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('recipient_address', '=', phone)
      .where('direction', '=', 'outbound')
      .execute();
    expect(count).toHaveLength(1);
    expect((await send(base(phone, { content: { text: 'other' } }), headers as never)).statusCode).toBe(422);
  });
});

describe('GET /messages/status/:uuid', () => {
  const status = (id: string, headers = tenant.headers) =>
    t.app.inject({ method: 'GET', url: `/external/v2/messages/status/${id}`, headers });

  it('is enqueued before the provider accepts, then sent with the provider id', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    fake.setDelay(400);
    const id = (await send(base(phone))).json().message.uuid as string;
    const before = await status(id);
    expect(before.statusCode).toBe(200);
    expect(before.json()).toEqual({
      message: {
        uuid: id,
        status: 'enqueued',
        error: null,
        // 0, or 1 once the worker has started the call.
        attempts: expect.any(Number),
        messageStatusPayload: {
          id,
          type: 'enqueued',
          payload: { type: 'session', whatsappMessageId: null },
          destination: phone,
        },
      },
    });
    const row = await settled(t, id);
    const after = (await status(id)).json().message;
    expect(after).toMatchObject({ status: 'sent', error: null, attempts: 1 });
    expect(after.messageStatusPayload).toEqual({
      id,
      type: 'sent',
      payload: { type: 'session', whatsappMessageId: row.provider_message_id },
      destination: phone,
    });
  });

  it('shows a delivered receipt and a failure', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const id = (await send(base(phone))).json().message.uuid as string;
    await settled(t, id);
    await t.database.db.updateTable('messages').set({ status: 'DELIVERED' }).where('id', '=', id).execute();
    expect((await status(id)).json().message.status).toBe('delivered');
    await t.database.db
      .updateTable('messages')
      .set({ status: 'ERROR', error: '131026: undeliverable' })
      .where('id', '=', id)
      .execute();
    expect((await status(id)).json().message).toMatchObject({ status: 'failed', error: '131026: undeliverable' });
  });

  it('answers 404 for another business, an unknown id, an inbound message; 400 for a bad uuid', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const id = (await send(base(phone))).json().message.uuid as string;
    expect((await status(id, other.headers)).statusCode).toBe(404);
    expect((await status('01900000-0000-7000-8000-000000000000')).statusCode).toBe(404);
    const inbound = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('direction', '=', 'inbound')
      .executeTakeFirstOrThrow();
    expect((await status(inbound.id)).statusCode).toBe(404);
    expect((await status('nope')).statusCode).toBe(400);
  });
});
