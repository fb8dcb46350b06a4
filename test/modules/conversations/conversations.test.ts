import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  at,
  insertAliases,
  insertContact,
  insertContactField,
  insertConversation,
  insertMessage,
} from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  await insertContactField(t.database.db, tenant.businessId, 'crm_id');
  await insertContactField(t.database.db, tenant.businessId, 'plan');
  await insertContactField(t.database.db, other.businessId, 'other_only');
});
afterAll(() => t.close());

const lookup = (query: string, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'GET', url: `/external/v2/conversations?${query}`, headers });

/** A contact with one conversation and `count` messages one second apart. */
async function contactWithMessages(
  contact: Parameters<typeof insertContact>[2],
  count = 3,
  businessId = tenant.businessId,
) {
  const db = t.database.db;
  const row = await insertContact(db, businessId, contact);
  const conversation = await insertConversation(db, businessId, row.id, { created_at: at(0, 1) });
  const messages = [];
  for (let i = 1; i <= count; i++) {
    messages.push(await insertMessage(db, businessId, conversation, { text: `m${i}`, created_at: at(i, 123) }));
  }
  return { contact: row, conversation, messages };
}

describe('GET /conversations by phone', () => {
  it('answers the contact, its conversation and its messages oldest first', async () => {
    const { contact, conversation, messages } = await contactWithMessages({
      phone_number: '4915112345678',
      first_name: 'Grace',
      last_name: 'Hopper',
    });
    await insertMessage(t.database.db, tenant.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'ERROR',
      error: 'blocked by provider',
      text: 'reply',
      created_at: at(10, 999),
    });
    const res = await lookup('phone=4915112345678');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      contact: { id: contact.id, first_name: 'Grace', last_name: 'Hopper', phone_number: '4915112345678' },
      conversation: {
        id: conversation.id,
        platform: 'whatsapp',
        created_at: '2026-01-01T00:00:00.000001Z',
        last_message_at: '2026-01-01T00:00:10.000999Z',
        message_count: 4,
        messages: [
          ...messages.map((m, i) => ({
            id: m.id,
            text: `m${i + 1}`,
            direction: 'inbound',
            status: 'RECEIVED',
            error: null,
            created_at: `2026-01-01T00:00:0${i + 1}.000123Z`,
          })),
          {
            id: expect.any(String),
            text: 'reply',
            direction: 'outbound',
            status: 'ERROR',
            error: 'blocked by provider',
            created_at: '2026-01-01T00:00:10.000999Z',
          },
        ],
      },
    });
  });

  it('returns the most recent message_limit messages, still oldest first', async () => {
    const { messages } = await contactWithMessages({ phone_number: '4915112345679' }, 5);
    const res = await lookup('phone=4915112345679&message_limit=2');
    expect(res.statusCode).toBe(200);
    expect(res.json().conversation.messages.map((m: { id: string }) => m.id)).toEqual([messages[3].id, messages[4].id]);
    expect(res.json().conversation.message_count).toBe(5);
  });

  it('returns 50 messages by default and up to 200', async () => {
    const { messages } = await contactWithMessages({ phone_number: '4915112345680' }, 52);
    const byDefault = (await lookup('phone=4915112345680')).json().conversation.messages;
    expect(byDefault).toHaveLength(50);
    expect(byDefault[0].id).toBe(messages[2].id);
    expect(byDefault[49].id).toBe(messages[51].id);
    expect((await lookup('phone=4915112345680&message_limit=200')).json().conversation.messages).toHaveLength(52);
  });

  it('answers an empty conversation with no messages and no last_message_at', async () => {
    await contactWithMessages({ phone_number: '4915112345681' }, 0);
    const res = await lookup('phone=4915112345681');
    expect(res.statusCode).toBe(200);
    expect(res.json().conversation).toMatchObject({ messages: [], message_count: 0, last_message_at: null });
  });

  it.each([
    ['Argentina without the mobile 9', '5491134567890', '541134567890'],
    ['Argentina with the mobile 9', '541134567891', '5491134567891'],
    ['Chile without the mobile 9', '56934567890', '5634567890'],
    ['Chile with the mobile 9', '5634567891', '56934567891'],
    ['Mexico without the legacy 1', '5215534567890', '525534567890'],
    ['Mexico with the legacy 1', '525534567891', '5215534567891'],
  ])('matches %s', async (_name, stored, asked) => {
    const { contact } = await contactWithMessages({ phone_number: stored }, 1);
    const res = await lookup(`phone=${asked}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().contact).toMatchObject({ id: contact.id, phone_number: stored });
  });

  it('finds a contact through a phone alias left by a merge', async () => {
    const { contact } = await contactWithMessages({ phone_number: '4915112345682' }, 1);
    await insertAliases(t.database.db, {
      business_id: tenant.businessId,
      kind: 'phone',
      value: '4915199999999',
      contact_id: contact.id,
    });
    const res = await lookup('phone=4915199999999');
    expect(res.statusCode).toBe(200);
    expect(res.json().contact.id).toBe(contact.id);
  });
});

describe('GET /conversations by custom field', () => {
  it('matches a defined field by value', async () => {
    const { contact, conversation } = await contactWithMessages(
      { custom_fields: { crm_id: 'CRM-1', plan: 'gold' } },
      1,
    );
    const res = await lookup('field_key=crm_id&field_value=CRM-1');
    expect(res.statusCode).toBe(200);
    expect(res.json().contact).toEqual({
      id: contact.id,
      first_name: 'Ada',
      last_name: 'Lovelace',
      phone_number: null,
    });
    expect(res.json().conversation.id).toBe(conversation.id);
  });

  it('matches a number or boolean stored value from its text', async () => {
    const { contact } = await contactWithMessages({ custom_fields: { crm_id: 4242 } }, 1);
    expect((await lookup('field_key=crm_id&field_value=4242')).json().contact.id).toBe(contact.id);
    expect((await lookup('field_key=crm_id&field_value=4242.0')).statusCode).toBe(200);
    const flagged = await contactWithMessages({ custom_fields: { crm_id: true } }, 1);
    expect((await lookup('field_key=crm_id&field_value=true')).json().contact.id).toBe(flagged.contact.id);
  });

  it('does not match another key or a partial value', async () => {
    await contactWithMessages({ custom_fields: { plan: 'CRM-77', crm_id: 'CRM-777' } }, 1);
    expect((await lookup('field_key=crm_id&field_value=CRM-77')).statusCode).toBe(404);
  });

  it('refuses a field the business has not defined, even when contacts carry it', async () => {
    await contactWithMessages({ custom_fields: { undefined_key: 'x' } }, 1);
    for (const key of ['undefined_key', 'other_only']) {
      const res = await lookup(`field_key=${key}&field_value=x`);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
      expect(res.json().error.message).toContain(key);
    }
  });

  it('answers 409 naming the contacts when several match', async () => {
    const a = await contactWithMessages({ custom_fields: { crm_id: 'DUP' } }, 1);
    const b = await contactWithMessages({ custom_fields: { crm_id: 'DUP' } }, 1);
    const res = await lookup('field_key=crm_id&field_value=DUP');
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('conflict');
    expect(res.json().error.details).toEqual([{ contact_id: a.contact.id }, { contact_id: b.contact.id }]);
  });
});

describe('GET /conversations with phone and field (AND)', () => {
  it('needs both to match the same contact', async () => {
    const a = await contactWithMessages({ phone_number: '4915112345690', custom_fields: { crm_id: 'AND-A' } }, 1);
    await contactWithMessages({ phone_number: '4915112345691', custom_fields: { crm_id: 'AND-B' } }, 1);
    expect((await lookup('phone=4915112345690&field_key=crm_id&field_value=AND-A')).json().contact.id).toBe(
      a.contact.id,
    );
    const crossed = await lookup('phone=4915112345690&field_key=crm_id&field_value=AND-B');
    expect(crossed.statusCode).toBe(404);
    expect(crossed.json().error.code).toBe('not_found');
  });

  it('lets the field pick one of several contacts sharing a phone', async () => {
    const a = await contactWithMessages({ phone_number: '4915112345692', custom_fields: { plan: 'gold' } }, 1);
    const b = await contactWithMessages({ phone_number: '4915112345692', custom_fields: { plan: 'free' } }, 2);
    const both = await lookup('phone=4915112345692');
    expect(both.statusCode).toBe(409);
    expect(both.json().error.details).toEqual([{ contact_id: a.contact.id }, { contact_id: b.contact.id }]);
    // Several contacts matched the phone, so the messages of the one the field picks are read apart.
    const picked = (await lookup('phone=4915112345692&field_key=plan&field_value=free&message_limit=1')).json();
    expect(picked.contact.id).toBe(b.contact.id);
    expect(picked.conversation.id).toBe(b.conversation.id);
    expect(picked.conversation.messages.map((m: { id: string }) => m.id)).toEqual([b.messages[1].id]);
  });
});

describe('GET /conversations answer written by the database', () => {
  // A phone that identifies one pair gets the answer the database wrote; a field lookup gets the
  // one the service serialises from the response schema. Both must be the same bytes.
  it.each([
    ['with messages and awkward text', 3],
    ['without messages', 0],
  ])("is byte for byte the service's own answer, %s", async (_name, count) => {
    const phone = `49151777000${count}`;
    const { conversation } = await contactWithMessages(
      {
        phone_number: phone,
        first_name: 'Zoë "Q"',
        last_name: 'back\\slash\ttab',
        custom_fields: { crm_id: `BYTES-${count}` },
      },
      count,
    );
    if (count > 0) {
      await insertMessage(t.database.db, tenant.businessId, conversation, {
        text: 'line\nbreak \u0001 control, emoji 🎉, </script> & "quotes"',
        error: 'é',
        status: 'ERROR',
        direction: 'outbound',
        created_at: at(50, 7),
      });
    }
    for (const limit of ['', '&message_limit=2']) {
      const written = await lookup(`phone=${phone}${limit}`);
      const built = await lookup(`field_key=crm_id&field_value=BYTES-${count}${limit}`);
      expect(written.statusCode).toBe(200);
      expect(built.statusCode).toBe(200);
      expect(written.headers['content-type']).toBe(built.headers['content-type']);
      expect(written.body).toBe(built.body);
    }
  });
});

describe('GET /conversations errors', () => {
  it('answers 404 when no contact matches, and when the contact has no conversation', async () => {
    const none = await lookup('phone=4915100000001');
    expect(none.statusCode).toBe(404);
    expect(none.json().error).toEqual({ code: 'not_found', message: 'contact not found' });
    await insertContact(t.database.db, tenant.businessId, { phone_number: '4915100000002' });
    const bare = await lookup('phone=4915100000002');
    expect(bare.statusCode).toBe(404);
    expect(bare.json().error).toEqual({ code: 'not_found', message: 'conversation not found' });
  });

  it('answers 409 naming the conversations when the contact has several', async () => {
    const { contact, conversation } = await contactWithMessages({ phone_number: '4915100000003' }, 1);
    const second = await insertConversation(t.database.db, tenant.businessId, contact.id, {
      channel: 'instagram',
      created_at: at(100),
    });
    const res = await lookup('phone=4915100000003');
    expect(res.statusCode).toBe(409);
    expect(res.json().error.details).toEqual([
      { conversation_id: conversation.id, platform: 'whatsapp' },
      { conversation_id: second.id, platform: 'instagram' },
    ]);
  });

  it("does not reach another business's contacts", async () => {
    await contactWithMessages(
      { phone_number: '4915100000004', custom_fields: { other_only: 'z' } },
      1,
      other.businessId,
    );
    expect((await lookup('phone=4915100000004')).statusCode).toBe(404);
    expect((await lookup('phone=4915100000004', other.headers)).statusCode).toBe(200);
    expect((await lookup('field_key=other_only&field_value=z', other.headers)).statusCode).toBe(200);
  });

  it('answers concurrent lookups of two businesses, which share statements, each with its own conversation and messages', async () => {
    const phones = ['4915100000101', '4915100000102', '4915100000103'];
    const cases = [];
    for (const [i, phone] of phones.entries()) {
      for (const owner of [tenant, other]) {
        const made = await contactWithMessages({ phone_number: phone }, i + 1, owner.businessId);
        cases.push({ owner, phone, conversation: made.conversation.id, messages: made.messages.map((m) => m.id) });
      }
    }
    // Each case twice, once with a smaller message_limit, all at once.
    const lookups = cases.flatMap((c) => [
      { ...c, query: `phone=${c.phone}`, expected: c.messages },
      { ...c, query: `phone=${c.phone}&message_limit=1`, expected: c.messages.slice(-1) },
    ]);
    const answers = await Promise.all(lookups.map((l) => lookup(l.query, l.owner.headers)));
    answers.forEach((res, i) => {
      const body = res.json();
      expect(body.conversation.id).toBe(lookups[i].conversation);
      expect(body.conversation.messages.map((m: { id: string }) => m.id)).toEqual(lookups[i].expected);
    });
  });

  it.each([
    ['no lookup method', ''],
    ['only message_limit', 'message_limit=10'],
    ['field_key without field_value', 'field_key=crm_id'],
    ['field_value without field_key', 'field_value=x'],
    ['phone with field_key only', 'phone=4915112345678&field_key=crm_id'],
    ['an empty field_key', 'field_key=&field_value=x'],
    ['a phone that is not a number', 'phone=abc'],
    ['a too short phone', 'phone=123'],
    ['a too long phone', `phone=${'1'.repeat(40)}`],
    ['a too long field_value', `field_key=crm_id&field_value=${'x'.repeat(1001)}`],
    ['message_limit over 200', 'phone=4915112345678&message_limit=201'],
    ['message_limit 0', 'phone=4915112345678&message_limit=0'],
    ['message_limit not a number', 'phone=4915112345678&message_limit=ten'],
    ['message_limit not an integer', 'phone=4915112345678&message_limit=1.5'],
    ['an unknown parameter', 'phone=4915112345678&email=a@b.co'],
  ])('answers 400 for %s', async (_name, query) => {
    const res = await lookup(query);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 401 without a key', async () => {
    const res = await lookup('phone=4915112345678', {});
    expect(res.statusCode).toBe(401);
  });
});

describe('GET /conversations documentation', () => {
  it('is in the OpenAPI document with its parameters, statuses and message order', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const operation = doc.paths['/external/v2/conversations'].get;
    expect(operation.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'field_key',
      'field_value',
      'message_limit',
      'phone',
    ]);
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '404', '409', '500']);
    const messages =
      operation.responses['200'].content['application/json'].schema.properties.conversation.properties.messages;
    expect(messages.description).toContain('oldest first');
  });
});
