import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { at, insertAliases, insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { identityDrift } from '../../helpers/contact-identities.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());
// Whatever a test wrote, every address names its oldest holder (the contacts' writer keeps contact_identities).
afterEach(async () => {
  expect(await identityDrift(t.database.db)).toEqual([]);
});

const contact = () => insertContact(t.database.db, tenant.businessId, { phone_number: '56912345678' });
const close = (
  id: string,
  headers: Record<string, string> = tenant.headers,
  extra: { payload?: string; headers?: Record<string, string> } = {},
) =>
  t.app.inject({
    method: 'POST',
    url: `/external/v2/contacts/${id}/conversation/close`,
    headers: { ...headers, ...extra.headers },
    payload: extra.payload,
  });
const remove = (id: string, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'DELETE', url: `/external/v2/contacts/${id}`, headers });
const count = async (
  table: 'contacts' | 'conversations' | 'messages' | 'events' | 'contact_aliases',
  column: 'id' | 'contact_id',
  id: string,
) => (await t.database.db.selectFrom(table).select(column).where(column, '=', id).execute()).length;

describe('POST /contacts/:uuid/conversation/close', () => {
  it('closes every open conversation with one conversation_archived event each, in the camelCase form', async () => {
    const c = await contact();
    const whatsapp = await insertConversation(t.database.db, tenant.businessId, c.id, {
      channel: 'whatsapp',
      created_at: at(1),
    });
    const instagram = await insertConversation(t.database.db, tenant.businessId, c.id, {
      channel: 'instagram',
      created_at: at(2),
    });
    const closedBefore = await insertConversation(t.database.db, tenant.businessId, c.id, {
      channel: 'sms',
      created_at: at(0),
      closed_at: at(3),
    });
    const res = await close(c.id);
    expect(res.statusCode).toBe(200);
    const [form] = res.json().contact;
    expect(form).toMatchObject({
      uuid: c.id,
      phoneNumber: '+56912345678',
      conversationHref: `${PUBLIC_URL}/dashboard/conversations/${instagram.id}`,
    });
    expect(form.closedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(form.closedAt > at(3)).toBe(true);
    const conversations = await t.database.db
      .selectFrom('conversations')
      .select(['id', 'closed_at'])
      .where('contact_id', '=', c.id)
      .execute();
    const closedAt = Object.fromEntries(conversations.map((r) => [r.id, r.closed_at]));
    expect(closedAt).toEqual({ [whatsapp.id]: form.closedAt, [instagram.id]: form.closedAt, [closedBefore.id]: at(3) });
    const events = await t.database.db
      .selectFrom('events')
      .selectAll()
      .where('contact_id', '=', c.id)
      .orderBy('channel')
      .execute();
    expect(
      events.map((e) => ({
        type: e.type,
        conversation_id: e.conversation_id,
        channel: e.channel,
        actor_type: e.actor_type,
        data: e.data,
        business_id: e.business_id,
      })),
    ).toEqual([
      {
        type: 'conversation_archived',
        conversation_id: instagram.id,
        channel: 'instagram',
        actor_type: 'api',
        data: { origin: 'api' },
        business_id: tenant.businessId,
      },
      {
        type: 'conversation_archived',
        conversation_id: whatsapp.id,
        channel: 'whatsapp',
        actor_type: 'api',
        data: { origin: 'api' },
        business_id: tenant.businessId,
      },
    ]);
  });

  it('when everything is already closed, writes no event and answers the latest closing time', async () => {
    const c = await contact();
    await insertConversation(t.database.db, tenant.businessId, c.id, { closed_at: at(50) });
    await insertConversation(t.database.db, tenant.businessId, c.id, { closed_at: at(70) });
    const res = await close(c.id);
    expect(res.json().contact[0].closedAt).toBe(at(70));
    expect(await count('events', 'contact_id', c.id)).toBe(0);
  });

  it('works with an empty JSON body and answers the closing time for a contact without conversations', async () => {
    const c = await contact();
    const before = (
      await t.database.db.selectNoFrom((eb) => eb.fn<string>('now', []).as('now')).executeTakeFirstOrThrow()
    ).now;
    const res = await close(c.id, tenant.headers, { payload: '', headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(200);
    const [form] = res.json().contact;
    expect(form).toMatchObject({ conversationHref: `${PUBLIC_URL}/dashboard/contacts/${c.id}` });
    expect(form.closedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(form.closedAt >= before).toBe(true);
    expect(await count('events', 'contact_id', c.id)).toBe(0);
  });

  it('answers 404 for an unknown contact and for a contact of another business, leaving it open', async () => {
    const c = await contact();
    const open = await insertConversation(t.database.db, tenant.businessId, c.id);
    expect((await close('0190a6f0-0000-7000-8000-000000000000')).statusCode).toBe(404);
    const foreign = await close(c.id, other.headers);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('not_found');
    const row = await t.database.db
      .selectFrom('conversations')
      .select('closed_at')
      .where('id', '=', open.id)
      .executeTakeFirstOrThrow();
    expect(row.closed_at).toBeNull();
  });

  it('answers 404 for an id that is no UUID (the contract lists no 400 here) and 401 without a key', async () => {
    for (const id of ['nope', `urn:uuid:${(await contact()).id}`])
      expect((await close(encodeURIComponent(id))).statusCode, id).toBe(404);
    expect((await close((await contact()).id, {})).statusCode).toBe(401);
  });
});

describe('DELETE /contacts/:uuid', () => {
  it('removes the contact with its conversations, messages, events and aliases', async () => {
    const c = await contact();
    const conversation = await insertConversation(t.database.db, tenant.businessId, c.id);
    await insertMessage(t.database.db, tenant.businessId, conversation);
    await insertAliases(t.database.db, {
      business_id: tenant.businessId,
      kind: 'email',
      value: 'alias@example.com',
      contact_id: c.id,
    });
    await close(c.id); // leaves an event behind
    expect(await count('events', 'contact_id', c.id)).toBe(1);
    const keep = await contact();
    const res = await remove(c.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, contact_id: c.id });
    for (const table of ['conversations', 'messages', 'events', 'contact_aliases'] as const) {
      expect(await count(table, 'contact_id', c.id), table).toBe(0);
    }
    expect(await count('contacts', 'id', c.id)).toBe(0);
    expect(await count('contacts', 'id', keep.id)).toBe(1);
    expect(
      (await t.app.inject({ method: 'GET', url: `/external/v2/contacts/${c.id}`, headers: tenant.headers })).statusCode,
    ).toBe(404);
    expect((await remove(c.id)).statusCode).toBe(404);
  });

  it('answers 404 for a contact of another business and keeps it', async () => {
    const c = await contact();
    const res = await remove(c.id, other.headers);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
    expect(await count('contacts', 'id', c.id)).toBe(1);
  });

  it('answers 404 for an id that is no UUID (the contract lists no 400 here) and 401 without a key', async () => {
    const c = await contact();
    for (const id of ['nope', `urn:uuid:${c.id}`])
      expect((await remove(encodeURIComponent(id))).statusCode, id).toBe(404);
    expect(await count('contacts', 'id', c.id)).toBe(1);
    expect((await remove((await contact()).id, {})).statusCode).toBe(401);
  });
});
