import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { identityDrift } from '../../helpers/contact-identities.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import {
  createAgent,
  createChannel,
  createTemplate,
  inboundContact,
  messageRow,
  newPhone,
  settled,
  type TestChannel,
} from './sending.fixtures.ts';

let t: TestApp;
let fake: FakeGraphApi;
let tenant: Tenant;
let other: Tenant;
let channel: TestChannel;
let otherChannel: TestChannel;
let positional: string;
let named: string;
let otherTemplate: string;

beforeAll(async () => {
  fake = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  channel = await createChannel(t.app, tenant, fake);
  otherChannel = await createChannel(t.app, other, fake);
  positional = await createTemplate(t.app, tenant, {
    name: 'order_shipped',
    body: 'Hi {{1}}, your order {{2}} ships today',
    buttons: [
      { type: 'quick_reply', text: 'Thanks' },
      { type: 'url', text: 'Track', url: 'https://shop.test/track/{{1}}' },
    ],
  });
  named = await createTemplate(t.app, tenant, {
    name: 'login_code',
    language: 'pt_BR',
    body: 'Hello {{first_name}}, your code is {{code}}',
  });
  otherTemplate = await createTemplate(t.app, other, { name: 'order_shipped', body: 'Hi {{1}}' });
});
afterAll(async () => {
  await t.close();
  await fake.close();
});
beforeEach(() => fake.reset());
// The contacts a template send creates are named by their numbers (contact_identities).
afterEach(async () => {
  expect(await identityDrift(t.database.db)).toEqual([]);
});

const sendsTo = (phone: string) => fake.sends().filter((r) => (r.body as { to?: string }).to === phone);
const sendTemplate = (query: Record<string, string>, payload: unknown, headers = tenant.headers) =>
  t.app.inject({ method: 'POST', url: '/external/v2/send-template', query, headers, payload: payload as object });
const q = (extra: Record<string, string> = {}) => ({
  template_id: positional,
  from_phone_number: channel.identifier,
  ...extra,
});

describe('POST /send-template', () => {
  it('sends a positional template with a URL button: exact Graph body, answer, stored message', async () => {
    const phone = newPhone();
    // Fields that match no variable are ignored, whatever they hold (the contract).
    const ignored = {
      note: 'ignored',
      order: { id: 7, items: [1, 2] },
      lines: ['a'],
      long: 'x'.repeat(5000),
      empty: null,
    };
    const res = await sendTemplate(q(), {
      phone,
      1: 'Ada',
      2: 'A-1',
      ...ignored,
      buttons: [{ index: 1, sub_type: 'url', text: 'A-1' }],
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      success: true,
      message_id: body.message_id,
      recipient: phone,
      template_name: 'order_shipped',
    });
    const row = await settled(t, body.message_id);
    expect(row).toMatchObject({
      status: 'SENT',
      type: 'template',
      text: 'Hi Ada, your order A-1 ships today',
      template_id: positional,
      channel_id: channel.id,
    });
    expect(sendsTo(phone).map((r) => r.body)).toEqual([
      {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: phone,
        type: 'template',
        biz_opaque_callback_data: body.message_id,
        template: {
          name: 'order_shipped',
          language: { code: 'en_US' },
          components: [
            {
              type: 'body',
              parameters: [
                { type: 'text', text: 'Ada' },
                { type: 'text', text: 'A-1' },
              ],
            },
            { type: 'button', sub_type: 'url', index: '1', parameters: [{ type: 'text', text: 'A-1' }] },
          ],
        },
      },
    ]);
    const status = await t.app.inject({
      method: 'GET',
      url: `/external/v2/messages/status/${body.message_id}`,
      headers: tenant.headers,
    });
    expect(status.json().message.messageStatusPayload.payload).toEqual({
      type: 'template',
      whatsappMessageId: row.provider_message_id,
    });
  });

  it('sends a named template (numbers become text), with no 24-hour window', async () => {
    const phone = newPhone();
    const res = await sendTemplate(q({ template_id: named }), {
      phone,
      first_name: 'Ada',
      code: 123456,
      1: 'not a variable here',
    });
    expect(res.statusCode).toBe(200);
    await settled(t, res.json().message_id);
    expect(sendsTo(phone).map((r) => r.body)).toEqual([
      {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: phone,
        type: 'template',
        biz_opaque_callback_data: res.json().message_id,
        template: {
          name: 'login_code',
          language: { code: 'pt_BR' },
          components: [
            {
              type: 'body',
              parameters: [
                { type: 'text', parameter_name: 'first_name', text: 'Ada' },
                { type: 'text', parameter_name: 'code', text: '123456' },
              ],
            },
          ],
        },
      },
    ]);
  });

  it('assigns the agent: agent_assigned, nothing for the same agent, agent_switched for another', async () => {
    const first = await createAgent(t.app, tenant, 'First');
    const second = await createAgent(t.app, tenant, 'Second');
    const phone = newPhone();
    const payload = { phone, 1: 'Ada', 2: 'A-1', buttons: [{ index: 1, sub_type: 'url', text: 'x' }] };
    const a = await sendTemplate(q({ agent_id: first }), payload);
    expect(a.statusCode).toBe(200);
    expect((await sendTemplate(q({ agent_id: first }), payload)).statusCode).toBe(200);
    expect((await sendTemplate(q({ agent_id: second }), payload)).statusCode).toBe(200);
    const message = await messageRow(t, a.json().message_id);
    const conversation = await t.database.db
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', message.conversation_id)
      .executeTakeFirstOrThrow();
    expect(conversation.agent_id).toBe(second);
    const events = await t.database.db
      .selectFrom('events')
      .selectAll()
      .where('conversation_id', '=', conversation.id)
      .orderBy('id')
      .execute();
    expect(events.map((e) => [e.type, e.actor_type, e.agent_id, e.data])).toEqual([
      ['agent_assigned', 'api', first, { from_agent: null, to_agent: first }],
      ['agent_switched', 'api', second, { from_agent: first, to_agent: second }],
    ]);
  });

  it('creates one contact and one conversation for concurrent sends to a new number', async () => {
    const phone = newPhone();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => sendTemplate(q({ template_id: named }), { phone, first_name: 'Ada', code: '1' })),
    );
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const contacts = await t.database.db
      .selectFrom('contacts')
      .select(['id', 'source'])
      .where('phone_number', '=', phone)
      .execute();
    expect(contacts).toEqual([{ id: contacts[0].id, source: 'whatsapp' }]);
    const conversations = await t.database.db
      .selectFrom('conversations')
      .selectAll()
      .where('contact_id', '=', contacts[0].id)
      .execute();
    expect(conversations).toHaveLength(1);
    expect(conversations[0]).toMatchObject({ message_count: 5, channel_id: channel.id });
  });

  it('reopens a closed conversation (conversation_unarchived) and replays an Idempotency-Key', async () => {
    const { phone, conversation } = await inboundContact(t, tenant, channel, 48);
    await t.database.db
      .updateTable('conversations')
      .set({ closed_at: new Date().toISOString() })
      .where('id', '=', conversation.id)
      .execute();
    const headers = { ...tenant.headers, 'idempotency-key': `tpl-${phone}` };
    const payload = { phone, first_name: 'Ada', code: '7' };
    const first = await t.app.inject({
      method: 'POST',
      url: '/external/v2/send-template',
      query: q({ template_id: named }),
      headers,
      payload,
    });
    const again = await t.app.inject({
      method: 'POST',
      url: '/external/v2/send-template',
      query: q({ template_id: named }),
      headers,
      payload,
    });
    expect(first.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    const row = await t.database.db
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ closed_at: null, message_count: 2 });
    const events = await t.database.db
      .selectFrom('events')
      .select(['type', 'actor_type', 'data'])
      .where('conversation_id', '=', conversation.id)
      .execute();
    expect(events).toEqual([{ type: 'conversation_unarchived', actor_type: 'api', data: { origin: 'api' } }]);
  });

  it('answers 403 for a template, number or agent of another business or unknown', async () => {
    const theirAgent = await createAgent(t.app, other);
    const payload = { phone: newPhone(), 1: 'Ada', 2: 'A-1', buttons: [{ index: 1, sub_type: 'url', text: 'x' }] };
    for (const query of [
      q({ template_id: otherTemplate }),
      q({ template_id: '01900000-0000-7000-8000-000000000000' }),
      q({ from_phone_number: otherChannel.identifier }),
      q({ from_phone_number: '15550000000' }),
      q({ agent_id: theirAgent }),
      q({ agent_id: '01900000-0000-7000-8000-000000000000' }),
    ]) {
      const res = await sendTemplate(query, payload);
      expect(res.statusCode, JSON.stringify(query)).toBe(403);
      expect(res.json().error.code).toBe('forbidden');
    }
    expect(sendsTo(payload.phone)).toHaveLength(0);
  });

  it('answers 400 for a missing variable or button value, and stores nothing', async () => {
    const phone = newPhone();
    const missingVariable = await sendTemplate(q(), {
      phone,
      1: 'Ada',
      buttons: [{ index: 1, sub_type: 'url', text: 'x' }],
    });
    expect(missingVariable.statusCode).toBe(400);
    expect(missingVariable.json().error.code).toBe('template_variable_missing');
    const missingButton = await sendTemplate(q(), { phone, 1: 'Ada', 2: 'A-1' });
    expect(missingButton.statusCode).toBe(400);
    const wrongButton = await sendTemplate(q(), {
      phone,
      1: 'Ada',
      2: 'A-1',
      buttons: [{ index: 0, sub_type: 'url', text: 'x' }],
    });
    expect(wrongButton.statusCode).toBe(400);
    // A variable's value is a string of up to 1 024 characters, a number or a boolean.
    const button = { buttons: [{ index: 1, sub_type: 'url', text: 'x' }] };
    for (const value of [{ name: 'Ada' }, ['Ada'], 'x'.repeat(1025)]) {
      const res = await sendTemplate(q(), { phone, 1: value, 2: 'A-1', ...button });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'validation_error', details: [{ location: 'body', path: '/1' }] });
    }
    expect((await sendTemplate(q(), { phone: newPhone(), 1: '😀'.repeat(1024), 2: 7, ...button })).statusCode).toBe(
      200,
    );
    expect(
      await t.database.db.selectFrom('contacts').select('id').where('phone_number', '=', phone).execute(),
    ).toHaveLength(0);
  });

  it('answers 400 for a template whose variable is named like a field of its own body; POST /messages/send fills it', async () => {
    const reserved = await createTemplate(t.app, tenant, {
      name: 'reserved_names',
      body: 'Call {{phone}} or tap {{buttons}}, {{__proto__}}',
    });
    const phone = newPhone();
    const res = await sendTemplate(q({ template_id: reserved }), { phone, buttons: [] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'template_variable_missing', details: [{ variable: 'phone' }] });
    expect(res.json().error.message).toContain('POST /messages/send');
    const sent = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: {
        from: 'whatsapp',
        type: 'template',
        content: {},
        channel_uuid: channel.id,
        to: phone,
        template_uuid: reserved,
        template_values: ['+1 415 555 0100', 'Track', 'x'],
      },
    });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(await settled(t, sent.json().message.uuid)).toMatchObject({
      status: 'SENT',
      text: 'Call +1 415 555 0100 or tap Track, x',
    });
  });

  it('sends with a rotated access token from the very next send', async () => {
    const send = async () => {
      const phone = newPhone();
      const res = await sendTemplate(q({ template_id: named }), { phone, first_name: 'Ada', code: '1' });
      expect(res.statusCode).toBe(200);
      expect((await settled(t, res.json().message_id)).status).toBe('SENT');
      return sendsTo(phone)[0].headers.authorization;
    };
    expect(await send()).toBe(`Bearer ${fake.accessToken}`);
    fake.acceptAccessToken('EAAGrotated');
    const rotated = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
      headers: adminHeaders,
      payload: { provider: { access_token: 'EAAGrotated' } },
    });
    expect(rotated.statusCode).toBe(200);
    expect(await send()).toBe('Bearer EAAGrotated');
  });

  it('answers 400 blocked for a contact who opted out', async () => {
    const { phone, contact } = await inboundContact(t, tenant, channel, 1);
    await t.database.db
      .updateTable('contacts')
      .set({ collected_data: JSON.stringify({ opted_out: true }) })
      .where('id', '=', contact.id)
      .execute();
    const res = await sendTemplate(q({ template_id: named }), { phone, first_name: 'Ada', code: '1' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('blocked');
  });

  // The query is built per test: channels and templates exist only once beforeAll ran.
  it.each([
    ['no phone', {}, { 1: 'a' }],
    ['a phone with letters', {}, { phone: '12ab5678' }],
    ['a phone that is no number', {}, { phone: '000000000' }],
    [
      'buttons of the wrong shape',
      {},
      { phone: '14155550100', buttons: [{ index: 0, sub_type: 'quick_reply', text: 'x' }] },
    ],
    ['a variable that is an object', {}, { phone: '14155550100', 1: { a: 1 } }],
    ['no template_id', { template_id: undefined }, { phone: '14155550100' }],
    ['a template_id that is no uuid', { template_id: 'abc' }, { phone: '14155550100' }],
    ['a from_phone_number with a plus', { from_phone_number: '+15550000000' }, { phone: '14155550100' }],
    ['an unknown query field', { extra: '1' }, { phone: '14155550100' }],
  ])('answers 400 for %s', async (_name, change, payload) => {
    const query: Record<string, string | undefined> = { ...q(), ...change };
    for (const key of Object.keys(query)) if (query[key] === undefined) delete query[key];
    const res = await sendTemplate(query as Record<string, string>, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });
});

describe('POST /messages/send with a template', () => {
  const send = (payload: Record<string, unknown>) =>
    t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: { from: 'whatsapp', type: 'template', content: {}, channel_uuid: channel.id, ...payload },
    });

  it('is allowed outside the 24-hour window; template_values fill the variables in order', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 25);
    const res = await send({ to: phone, template_uuid: named, template_values: ['Ada', '42'] });
    expect(res.statusCode).toBe(200);
    const row = await settled(t, res.json().message.uuid);
    expect(row).toMatchObject({
      status: 'SENT',
      type: 'template',
      text: 'Hello Ada, your code is 42',
      template_id: named,
    });
    expect((sendsTo(phone)[0].body as { template: unknown }).template).toEqual({
      name: 'login_code',
      language: { code: 'pt_BR' },
      components: [
        {
          type: 'body',
          parameters: [
            { type: 'text', parameter_name: 'first_name', text: 'Ada' },
            { type: 'text', parameter_name: 'code', text: '42' },
          ],
        },
      ],
    });
  });

  it('answers 400 for missing or extra values and content, 404 for a template of another business', async () => {
    const phone = newPhone();
    expect((await send({ to: phone, template_uuid: named, template_values: ['Ada'] })).json().error.code).toBe(
      'template_variable_missing',
    );
    expect((await send({ to: phone, template_uuid: named, template_values: ['a', 'b', 'c'] })).statusCode).toBe(400);
    const withUrl = await send({
      to: phone,
      template_uuid: named,
      template_values: ['a', 'b'],
      content: { url: 'https://cdn.test/a.png' },
    });
    expect(withUrl.statusCode).toBe(400);
    expect(withUrl.json().error.details).toEqual([{ path: '/content/url' }]);
    const theirs = await send({ to: phone, template_uuid: otherTemplate, template_values: ['a'] });
    expect(theirs.statusCode).toBe(404);
  });

  // Clients of the platform the contract comes from send templates as type text, with a text in content.
  it.each(['text', 'template'])(
    'sends the template for type %s with a content.text, which is ignored: the message is the template',
    async (type) => {
      const { phone } = await inboundContact(t, tenant, channel, 25);
      const res = await send({
        type,
        to: phone,
        content: { text: 'Hello Ada, your code is 42 (as the client shows it)' },
        template_uuid: named,
        template_values: ['Ada', '42'],
      });
      expect(res.statusCode, res.body).toBe(200);
      const row = await settled(t, res.json().message.uuid);
      expect(row).toMatchObject({
        status: 'SENT',
        type: 'template',
        text: 'Hello Ada, your code is 42',
        template_id: named,
      });
      const [request] = sendsTo(phone);
      expect(request.body).toMatchObject({ type: 'template', template: { name: 'login_code' } });
      expect(request.body).not.toHaveProperty('text');
      const status = await t.app.inject({
        url: `/external/v2/messages/status/${res.json().message.uuid}`,
        headers: tenant.headers,
      });
      expect(status.json().message.messageStatusPayload.payload.type).toBe('template');
    },
  );

  it('answers 400 for template_uuid with a media type, and for template_values without template_uuid', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    const image = await send({
      type: 'image',
      to: phone,
      content: { url: 'https://cdn.test/a.png' },
      template_uuid: named,
      template_values: ['Ada', '42'],
    });
    expect(image.statusCode).toBe(400);
    expect(image.json().error.details).toEqual([{ path: '/type' }]);
    const values = await send({ type: 'text', to: phone, content: { text: 'hi' }, template_values: ['Ada'] });
    expect(values.statusCode).toBe(400);
    expect(values.json().error.details).toEqual([{ path: '/template_values' }]);
    expect(sendsTo(phone)).toEqual([]);
  });
});
