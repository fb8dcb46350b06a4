import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { at, insertContact, insertConversation } from '../../helpers/factories.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import { createWhatsAppChannel, notificationFor, postSigned } from '../inbound/whatsapp-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  for (const [email, name] of [
    ['ops@acme.test', 'Ops'],
    ['Sales@Acme.test', 'Sales'],
  ]) {
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/users`,
      headers: adminHeaders,
      payload: { email, name },
    });
    expect(res.statusCode).toBe(201);
  }
  await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${other.businessId}/users`,
    headers: adminHeaders,
    payload: { email: 'outsider@other.test', name: 'Outsider' },
  });
});
afterAll(() => t.close());

const patch = (id: string, payload: unknown, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'PATCH', url: `/external/v2/contacts/${id}`, headers, payload: payload as object });
const contact = (overrides = {}) =>
  insertContact(t.database.db, tenant.businessId, {
    first_name: 'Ada',
    last_name: 'Lovelace',
    phone_number: '5491123456789',
    ...overrides,
  });
const eventsOf = (contactId: string) =>
  t.database.db.selectFrom('events').selectAll().where('contact_id', '=', contactId).orderBy('id').execute();

describe('PATCH /contacts/:uuid', () => {
  it('answers the camelCase form inside an array', async () => {
    const c = await contact({
      avatar_url: 'https://cdn.test/a.png',
      source: 'whatsapp',
      tags: ['a'],
      custom_fields: { plan: 'gold' },
    });
    const res = await patch(c.id, {});
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      contact: [
        {
          uuid: c.id,
          name: 'Ada Lovelace',
          phoneNumber: '+5491123456789',
          avatarUrl: 'https://cdn.test/a.png',
          createdAt: c.created_at,
          source: 'whatsapp',
          closedAt: null,
          href: `${PUBLIC_URL}/dashboard/contacts/${c.id}`,
          conversationHref: `${PUBLIC_URL}/dashboard/contacts/${c.id}`,
          tags: ['a'],
          assignedUser: null,
          customFields: { plan: 'gold' },
        },
      ],
    });
    expect(await eventsOf(c.id)).toEqual([]);
  });

  it('links conversationHref to the most recent conversation and gives phoneNumber null without a phone', async () => {
    const c = await contact({ phone_number: null });
    await insertConversation(t.database.db, tenant.businessId, c.id, { created_at: at(10) });
    const latest = await insertConversation(t.database.db, tenant.businessId, c.id, { created_at: at(20) });
    const [form] = (await patch(c.id, {})).json().contact;
    expect(form.conversationHref).toBe(`${PUBLIC_URL}/dashboard/conversations/${latest.id}`);
    expect(form.phoneNumber).toBeNull();
    expect(form.closedAt).toBeNull();
  });

  it('splits name into first and last name', async () => {
    const c = await contact();
    const [form] = (await patch(c.id, { name: '  María José  de la Cruz ' })).json().contact;
    expect(form.name).toBe('María José de la Cruz');
    const row = await t.database.db.selectFrom('contacts').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow();
    expect([row.first_name, row.last_name]).toEqual(['María', 'José de la Cruz']);
    const single = (await patch(c.id, { name: 'Cher' })).json().contact[0];
    expect(single.name).toBe('Cher');
  });

  it('records all changed fields as one contact_field_changed event, leaving unchanged values out', async () => {
    const c = await contact({ tags: ['old'], custom_fields: { plan: 'silver', city: 'Rosario', keep: 1 } });
    const res = await patch(c.id, {
      name: 'Ada Byron',
      tags: ['new', 'old', 'new'],
      custom_fields: { plan: 'gold', city: 'Rosario', seats: 5, keep: null },
      assigned_user: 'OPS@acme.test',
    });
    expect(res.statusCode).toBe(200);
    const [form] = res.json().contact;
    expect(form).toMatchObject({
      name: 'Ada Byron',
      tags: ['new', 'old'],
      assignedUser: 'ops@acme.test',
      customFields: { plan: 'gold', city: 'Rosario', seats: 5 },
    });
    const events = await eventsOf(c.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      business_id: tenant.businessId,
      type: 'contact_field_changed',
      contact_id: c.id,
      conversation_id: null,
      channel: null,
      actor_type: 'api',
    });
    expect(events[0].data).toEqual({
      source: 'api',
      changes: [
        { field: 'last_name', custom: false, from: 'Lovelace', to: 'Byron' },
        { field: 'tags', custom: false, from: ['old'], to: ['new', 'old'] },
        { field: 'plan', custom: true, from: 'silver', to: 'gold' },
        { field: 'seats', custom: true, from: null, to: 5 },
        { field: 'keep', custom: true, from: 1, to: null },
        { field: 'assigned_user', custom: false, from: null, to: 'ops@acme.test' },
      ],
    });
  });

  it('writes nothing when nothing changes', async () => {
    const c = await contact({ tags: ['a', 'b'], custom_fields: { plan: 'gold' } });
    const res = await patch(c.id, {
      name: 'Ada Lovelace',
      tags: ['b', 'a'],
      custom_fields: { plan: 'gold', absent: null },
      unassign_user: true,
    });
    expect(res.statusCode).toBe(200);
    expect(await eventsOf(c.id)).toEqual([]);
  });

  it('merges custom fields: only the keys sent change', async () => {
    const c = await contact({ custom_fields: { a: 1, b: 'two' } });
    const [form] = (await patch(c.id, { custom_fields: { b: 'deux', c: false } })).json().contact;
    expect(form.customFields).toEqual({ a: 1, b: 'deux', c: false });
  });

  it('replaces tags and copies them to every conversation of the contact', async () => {
    const c = await contact({ tags: ['a', 'b'] });
    const first = await insertConversation(t.database.db, tenant.businessId, c.id, { tags: ['stale'] });
    const second = await insertConversation(t.database.db, tenant.businessId, c.id, { closed_at: at(5) });
    const bystander = await insertConversation(
      t.database.db,
      tenant.businessId,
      (await contact({ phone_number: null })).id,
      { tags: ['mine'] },
    );
    const [form] = (await patch(c.id, { tags: ['c'] })).json().contact;
    expect(form.tags).toEqual(['c']);
    const rows = await t.database.db
      .selectFrom('conversations')
      .select(['id', 'tags'])
      .where('id', 'in', [first.id, second.id, bystander.id])
      .execute();
    expect(Object.fromEntries(rows.map((r) => [r.id, r.tags]))).toEqual({
      [first.id]: ['c'],
      [second.id]: ['c'],
      [bystander.id]: ['mine'],
    });
    expect((await patch(c.id, { tags: [] })).json().contact[0].tags).toEqual([]);
  });

  it('assigns and unassigns a user of the business', async () => {
    const c = await contact();
    expect((await patch(c.id, { assigned_user: 'sales@acme.test' })).json().contact[0].assignedUser).toBe(
      'Sales@Acme.test',
    );
    expect((await patch(c.id, { assigned_user: 'ops@acme.test' })).json().contact[0].assignedUser).toBe(
      'ops@acme.test',
    );
    expect((await patch(c.id, { unassign_user: false })).json().contact[0].assignedUser).toBe('ops@acme.test');
    expect((await patch(c.id, { unassign_user: true })).json().contact[0].assignedUser).toBeNull();
    const changes = (await eventsOf(c.id)).map((e) => (e.data as { changes: unknown[] }).changes);
    expect(changes).toEqual([
      [{ field: 'assigned_user', custom: false, from: null, to: 'Sales@Acme.test' }],
      [{ field: 'assigned_user', custom: false, from: 'Sales@Acme.test', to: 'ops@acme.test' }],
      [{ field: 'assigned_user', custom: false, from: 'ops@acme.test', to: null }],
    ]);
  });

  it('answers 400 for a user who is unknown or belongs to another business, and changes nothing', async () => {
    const c = await contact();
    for (const email of ['nobody@acme.test', 'outsider@other.test']) {
      const res = await patch(c.id, { name: 'Changed Name', assigned_user: email });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const row = await t.database.db.selectFrom('contacts').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow();
    expect(row.first_name).toBe('Ada');
    expect(await eventsOf(c.id)).toEqual([]);
  });

  it.each([
    ['an unknown field', { email: 'x@example.com' }],
    ['a number as name', { name: 42 }],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['an over-long name', { name: 'a'.repeat(401) }],
    ['tags not an array', { tags: 'vip' }],
    ['a tag not a string', { tags: [1] }],
    ['too many tags', { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }],
    ['an over-long tag', { tags: ['t'.repeat(101)] }],
    ['custom_fields not an object', { custom_fields: 'x' }],
    ['a nested custom field value', { custom_fields: { a: [1] } }],
    ['an over-long custom field value', { custom_fields: { a: 'v'.repeat(2001) } }],
    ['unassign_user not a boolean', { unassign_user: 'true' }],
    ['assigned_user together with unassign_user', { assigned_user: 'ops@acme.test', unassign_user: true }],
    ['a body that is not an object', [1]],
  ])('answers 400 for %s', async (_name, payload) => {
    const c = await contact();
    const res = await patch(c.id, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 400 when custom fields would exceed 100 on the contact', async () => {
    const full = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
    const c = await contact({ custom_fields: full });
    const res = await patch(c.id, { custom_fields: { extra: 1 } });
    expect(res.statusCode).toBe(400);
    expect((await patch(c.id, { custom_fields: { k1: 'changed' } })).statusCode).toBe(200);
  });

  it('answers 400 for malformed JSON', async () => {
    const c = await contact();
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/external/v2/contacts/${c.id}`,
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: '{"name": "x"',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 404 for an unknown contact and for a contact of another business, 400 for a malformed id, 401 without a key', async () => {
    const c = await contact();
    expect((await patch('0190a6f0-0000-7000-8000-000000000000', { name: 'X' })).statusCode).toBe(404);
    const foreign = await patch(c.id, { name: 'Hijack' }, other.headers);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('not_found');
    expect((await patch('nope', { name: 'X' })).statusCode).toBe(400);
    expect((await patch(c.id, { name: 'X' }, {})).statusCode).toBe(401);
    const row = await t.database.db.selectFrom('contacts').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow();
    expect(row.first_name).toBe('Ada');
  });
});

describe('source', () => {
  it('is the type of the channel whose inbound message created the contact, in every answer that shows it', async () => {
    const channel = await createWhatsAppChannel(t.app, tenant.businessId);
    const waId = '5491140001234';
    const notification = notificationFor(channel, {
      contacts: [{ waId, name: 'Lucía' }],
      messages: [inboundMessage(waId, 'text', { body: 'hola' })],
    });
    expect((await postSigned(t.app, notification, channel.appSecret)).statusCode).toBe(200);
    const found = await t.app.inject({ url: `/external/v2/contacts?phone=${waId}`, headers: tenant.headers });
    const [{ id }] = found.json().results as { id: string }[];
    expect((await patch(id, {})).json().contact[0].source).toBe('whatsapp');
    const close = await t.app.inject({
      method: 'POST',
      url: `/external/v2/contacts/${id}/conversation/close`,
      headers: tenant.headers,
    });
    expect(close.json().contact[0].source).toBe('whatsapp');
  });
});
