import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { at, insertAliases, insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { identityDrift } from '../../helpers/contact-identities.ts';
import { movesEnded } from '../../helpers/merges.ts';

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

const merge = (payload: unknown, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'POST', url: '/external/v2/contacts/merge', headers, payload: payload as object });
const search = (query: string) =>
  t.app.inject({ method: 'GET', url: `/external/v2/contacts?${query}`, headers: tenant.headers });

const contact = (overrides: Parameters<typeof insertContact>[2] = {}, businessId = tenant.businessId) =>
  insertContact(t.database.db, businessId, overrides);

async function counts(contactId: string) {
  const db = t.database.db;
  const count = async (table: 'conversations' | 'messages' | 'events' | 'contact_aliases') => {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('business_id', '=', tenant.businessId)
      .where('contact_id', '=', contactId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  return {
    conversations: await count('conversations'),
    messages: await count('messages'),
    events: await count('events'),
    aliases: await count('contact_aliases'),
  };
}

const findContact = (id: string) =>
  t.database.db
    .selectFrom('contacts')
    .selectAll()
    .where('business_id', '=', tenant.businessId)
    .where('id', '=', id)
    .executeTakeFirst();

const eventsOf = (contactId: string, type = 'contact_field_changed') =>
  t.database.db
    .selectFrom('events')
    .selectAll()
    .where('business_id', '=', tenant.businessId)
    .where('contact_id', '=', contactId)
    .where('type', '=', type)
    .execute();

describe('POST /contacts/merge', () => {
  it("moves the loser's history and aliases, fills the survivor's empty fields, and deletes the loser", async () => {
    const db = t.database.db;
    const userId = newId();
    await db
      .insertInto('users')
      .values({ business_id: tenant.businessId, id: userId, email: 'agent@acme.test', name: 'Agent' })
      .execute();
    const survivor = await contact({
      first_name: 'Ada',
      last_name: '',
      phone_number: '4917000000001',
      tags: ['vip', 'b2b'],
      custom_fields: { plan: 'gold', shared: 'survivor' },
      collected_data: { k1: 's', k2: 's' },
    });
    const loser = await contact({
      first_name: 'Augusta',
      last_name: 'King',
      email: 'Augusta@Example.com',
      phone_number: '4917000000002',
      external_id: 'ext-loser',
      avatar_url: 'https://cdn.test/a.png',
      source: 'instagram',
      assigned_user_id: userId,
      tags: ['b2b', 'lead'],
      custom_fields: { city: 'London', shared: 'loser' },
      collected_data: { k2: 'l', k3: 'l' },
    });
    await insertAliases(db, [
      { business_id: tenant.businessId, kind: 'email', value: 'old@example.com', contact_id: loser.id },
      { business_id: tenant.businessId, kind: 'phone', value: '4917000000099', contact_id: loser.id },
    ]);
    const kept = await insertConversation(db, tenant.businessId, survivor.id, { created_at: at(0) });
    await insertMessage(db, tenant.businessId, kept, { created_at: at(1) });
    const moved = [
      await insertConversation(db, tenant.businessId, loser.id, { channel: 'instagram', created_at: at(2) }),
      await insertConversation(db, tenant.businessId, loser.id, { channel: 'email', created_at: at(3) }),
    ];
    for (const [i, conversation] of moved.entries()) {
      await insertMessage(db, tenant.businessId, conversation, { created_at: at(10 + i) });
      await insertMessage(db, tenant.businessId, conversation, {
        created_at: at(20 + i),
        direction: 'outbound',
        sender_type: 'human',
        status: 'READ',
      });
    }
    await db
      .insertInto('events')
      .values([
        {
          business_id: tenant.businessId,
          id: newId(),
          type: 'conversation_archived',
          conversation_id: moved[0].id,
          contact_id: loser.id,
          channel: 'instagram',
          actor_type: 'human',
          data: { origin: 'dashboard' },
        },
        {
          business_id: tenant.businessId,
          id: newId(),
          type: 'contact_field_changed',
          conversation_id: null,
          contact_id: loser.id,
          channel: null,
          actor_type: 'api',
          data: { source: 'api', changes: [] },
        },
      ])
      .execute();

    expect(await counts(survivor.id)).toEqual({ conversations: 1, messages: 1, events: 0, aliases: 0 });
    expect(await counts(loser.id)).toEqual({ conversations: 2, messages: 4, events: 2, aliases: 2 });

    const res = await merge({ survivor_id: survivor.id, loser_id: loser.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, survivor_id: survivor.id });

    await movesEnded(db);
    expect(await findContact(loser.id)).toBeUndefined();
    expect(await counts(loser.id)).toEqual({ conversations: 0, messages: 0, events: 0, aliases: 0 });
    // The survivor's own merge event is the one event more.
    expect(await counts(survivor.id)).toEqual({ conversations: 3, messages: 5, events: 3, aliases: 3 });

    const merged = await findContact(survivor.id);
    expect(merged).toMatchObject({
      first_name: 'Ada',
      last_name: 'King',
      email: 'Augusta@Example.com',
      phone_number: '4917000000001',
      external_id: 'ext-loser',
      avatar_url: 'https://cdn.test/a.png',
      source: 'instagram',
      assigned_user_id: userId,
      tags: ['vip', 'b2b', 'lead'],
      custom_fields: { plan: 'gold', shared: 'survivor', city: 'London' },
      collected_data: { k1: 's', k2: 's', k3: 'l' },
    });
    const conversations = await db
      .selectFrom('conversations')
      .select(['id', 'tags'])
      .where('contact_id', '=', survivor.id)
      .execute();
    expect(conversations.map((c) => c.tags)).toEqual([
      ['vip', 'b2b', 'lead'],
      ['vip', 'b2b', 'lead'],
      ['vip', 'b2b', 'lead'],
    ]);

    const aliases = await db
      .selectFrom('contact_aliases')
      .select(['kind', 'value'])
      .where('contact_id', '=', survivor.id)
      .orderBy('value')
      .execute();
    expect(aliases).toEqual([
      { kind: 'phone', value: '4917000000002' },
      { kind: 'phone', value: '4917000000099' },
      { kind: 'email', value: 'old@example.com' },
    ]);

    const mergeEvents = (await eventsOf(survivor.id)).filter((e) => e.data.source === 'merge');
    expect(mergeEvents).toHaveLength(1);
    const [event] = mergeEvents;
    expect(event).toMatchObject({ actor_type: 'api', conversation_id: null, channel: null });
    expect(event.data.changes).toEqual([
      { field: 'last_name', custom: false, from: '', to: 'King' },
      { field: 'email', custom: false, from: null, to: 'Augusta@Example.com' },
      { field: 'external_id', custom: false, from: null, to: 'ext-loser' },
      { field: 'avatar_url', custom: false, from: null, to: 'https://cdn.test/a.png' },
      { field: 'source', custom: false, from: null, to: 'instagram' },
      { field: 'assigned_user', custom: false, from: null, to: 'agent@acme.test' },
      { field: 'tags', custom: false, from: ['vip', 'b2b'], to: ['vip', 'b2b', 'lead'] },
      { field: 'city', custom: true, from: null, to: 'London' },
      { field: 'collected_data.k3', custom: false, from: null, to: 'l' },
    ]);

    // The loser's identifiers now lead to the survivor.
    for (const query of [
      'email=augusta@example.com',
      'email=OLD@example.com',
      'phone=4917000000002',
      'phone=4917000000099',
      'external_id=ext-loser',
    ]) {
      const found = await search(query);
      expect(found.statusCode, query).toBe(200);
      expect(
        found.json().results.map((c: { id: string }) => c.id),
        query,
      ).toEqual([survivor.id]);
    }
  });

  it('applies field_choices where both contacts have a value, and keeps the replaced email as an alias', async () => {
    const survivor = await contact({
      first_name: 'Sam',
      last_name: 'Smith',
      email: 'sam@old.test',
      phone_number: '4917000000010',
      external_id: 'ext-s',
      collected_data: { city: 'Paris', zip: '75001' },
    });
    const loser = await contact({
      first_name: 'Samuel',
      last_name: 'Smythe',
      email: 'samuel@new.test',
      phone_number: '4917000000011',
      external_id: 'ext-l',
      collected_data: { city: 'Lyon', zip: '69001' },
    });
    const res = await merge({
      survivor_id: survivor.id,
      loser_id: loser.id,
      field_choices: {
        first_name: 'loser',
        last_name: 'survivor',
        email: 'loser',
        'collected_data.city': 'loser',
        'collected_data.absent': 'loser',
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await findContact(survivor.id)).toMatchObject({
      first_name: 'Samuel',
      last_name: 'Smith',
      email: 'samuel@new.test',
      phone_number: '4917000000010',
      external_id: 'ext-s',
      collected_data: { city: 'Lyon', zip: '75001' },
    });
    const [event] = await eventsOf(survivor.id);
    expect(event.data.changes).toEqual([
      { field: 'first_name', custom: false, from: 'Sam', to: 'Samuel' },
      { field: 'email', custom: false, from: 'sam@old.test', to: 'samuel@new.test' },
      { field: 'collected_data.city', custom: false, from: 'Paris', to: 'Lyon' },
    ]);
    for (const query of ['email=sam@old.test', 'email=samuel@new.test', 'phone=4917000000011']) {
      expect(
        (await search(query)).json().results.map((c: { id: string }) => c.id),
        query,
      ).toEqual([survivor.id]);
    }
    expect((await search('external_id=ext-l')).json().results).toEqual([]);
  });

  it("matches the loser's phone in its country variants through the alias", async () => {
    const survivor = await contact({ phone_number: '5491122220000' });
    const loser = await contact({ phone_number: '5491122221111' });
    await insertConversation(t.database.db, tenant.businessId, loser.id);
    expect((await merge({ survivor_id: survivor.id, loser_id: loser.id })).statusCode).toBe(200);
    for (const phone of ['5491122221111', '541122221111']) {
      const lookup = await t.app.inject({
        method: 'GET',
        url: `/external/v2/conversations?phone=${phone}`,
        headers: tenant.headers,
      });
      expect(lookup.statusCode, phone).toBe(200);
      expect(lookup.json().contact.id).toBe(survivor.id);
    }
  });

  it('writes no event when the survivor gains nothing, and tolerates aliases both contacts hold', async () => {
    const survivor = await contact({ email: 'same@x.test', tags: ['a'] });
    const loser = await contact({ email: 'SAME@x.test', first_name: 'Ada', last_name: 'Lovelace', tags: ['a'] });
    await insertAliases(t.database.db, [
      { business_id: tenant.businessId, kind: 'email', value: 'shared@x.test', contact_id: survivor.id },
      { business_id: tenant.businessId, kind: 'email', value: 'shared@x.test', contact_id: loser.id },
    ]);
    const res = await merge({ survivor_id: survivor.id, loser_id: loser.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(await eventsOf(survivor.id)).toEqual([]);
    await movesEnded(t.database.db);
    expect(await findContact(loser.id)).toBeUndefined();
    const aliases = await t.database.db
      .selectFrom('contact_aliases')
      .select('value')
      .where('contact_id', '=', survivor.id)
      .execute();
    expect(aliases).toEqual([{ value: 'shared@x.test' }]);
  });

  it("gives the survivor the loser's phone when it has none, without an alias", async () => {
    const survivor = await contact({ email: 'nophone@x.test' });
    const loser = await contact({ phone_number: '5215512340000' });
    expect((await merge({ survivor_id: survivor.id, loser_id: loser.id })).statusCode).toBe(200);
    expect(await findContact(survivor.id)).toMatchObject({ phone_number: '5215512340000', phone_key: '525512340000' });
    expect(await counts(survivor.id)).toMatchObject({ aliases: 0 });
    expect((await search('phone=525512340000')).json().results.map((c: { id: string }) => c.id)).toEqual([survivor.id]);
  });

  it('merges two test contacts', async () => {
    const survivor = await contact({ is_test: true });
    const loser = await contact({ is_test: true, email: 'tester@x.test' });
    expect((await merge({ survivor_id: survivor.id, loser_id: loser.id })).statusCode).toBe(200);
    expect((await findContact(survivor.id))?.email).toBe('tester@x.test');
  });

  it('accepts ids in upper case', async () => {
    const survivor = await contact();
    const loser = await contact();
    const res = await merge({ survivor_id: survivor.id.toUpperCase(), loser_id: loser.id.toUpperCase() });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, survivor_id: survivor.id });
  });
});

describe('POST /contacts/merge refusals', () => {
  it('refuses the same contact twice', async () => {
    const one = await contact();
    for (const loserId of [one.id, one.id.toUpperCase()]) {
      const res = await merge({ survivor_id: one.id, loser_id: loserId });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect(await findContact(one.id)).toBeDefined();
  });

  it('refuses a test contact with a real one, both ways', async () => {
    const real = await contact();
    const test = await contact({ is_test: true });
    for (const [survivor, loser] of [
      [real, test],
      [test, real],
    ]) {
      const res = await merge({ survivor_id: survivor.id, loser_id: loser.id });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toContain('test contact');
    }
    expect(await findContact(real.id)).toBeDefined();
    expect(await findContact(test.id)).toBeDefined();
  });

  it("answers 404 for an unknown contact or another business's, and changes nothing", async () => {
    const mine = await contact({ email: 'mine@x.test' });
    const theirs = await contact({ email: 'theirs@x.test' }, other.businessId);
    await insertConversation(t.database.db, other.businessId, theirs.id);
    const unknown = newId();
    for (const body of [
      { survivor_id: mine.id, loser_id: theirs.id },
      { survivor_id: theirs.id, loser_id: mine.id },
      { survivor_id: mine.id, loser_id: unknown },
      { survivor_id: unknown, loser_id: mine.id },
    ]) {
      const res = await merge(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    expect(await findContact(mine.id)).toMatchObject({ email: 'mine@x.test' });
    const foreign = await t.database.db
      .selectFrom('conversations')
      .select('contact_id')
      .where('business_id', '=', other.businessId)
      .execute();
    expect(foreign).toEqual([{ contact_id: theirs.id }]);
  });

  it.each([
    ['a missing survivor_id', { loser_id: newId() }],
    ['a missing loser_id', { survivor_id: newId() }],
    ['a malformed id', { survivor_id: 'nope', loser_id: newId() }],
    ['an id of the wrong type', { survivor_id: 42, loser_id: newId() }],
    ['an unknown body field', { survivor_id: newId(), loser_id: newId(), force: true }],
    ['an unknown field choice', { survivor_id: newId(), loser_id: newId(), field_choices: { phone_number: 'loser' } }],
    [
      'a custom field choice',
      { survivor_id: newId(), loser_id: newId(), field_choices: { 'custom_fields.plan': 'loser' } },
    ],
    [
      'a collected_data choice without key',
      { survivor_id: newId(), loser_id: newId(), field_choices: { 'collected_data.': 'loser' } },
    ],
    [
      'a choice other than survivor or loser',
      { survivor_id: newId(), loser_id: newId(), field_choices: { first_name: 'both' } },
    ],
    ['field_choices not an object', { survivor_id: newId(), loser_id: newId(), field_choices: ['first_name'] }],
    [
      'too many field choices',
      {
        survivor_id: newId(),
        loser_id: newId(),
        field_choices: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`collected_data.k${i}`, 'loser'])),
      },
    ],
  ])('answers 400 for %s', async (_name, body) => {
    const res = await merge(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 400 for malformed JSON and an empty body', async () => {
    const headers = { ...tenant.headers, 'content-type': 'application/json' };
    for (const payload of ['{"survivor_id": ', '']) {
      const res = await t.app.inject({ method: 'POST', url: '/external/v2/contacts/merge', headers, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });

  it('answers 401 without a key', async () => {
    const res = await merge({ survivor_id: newId(), loser_id: newId() }, {});
    expect(res.statusCode).toBe(401);
  });
});
