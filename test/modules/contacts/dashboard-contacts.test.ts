import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import {
  at,
  insertAliases,
  insertContact,
  insertContactField,
  insertConversation,
  insertMessage,
} from '../../helpers/factories.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';

let t: TestApp;
let businessId: string;
let otherBusinessId: string;
let browser: Browser;
let admin: Browser;
let userId: string;
const db = () => t.database.db;

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  businessId = (await createTenant(t.app, 'Acme')).businessId;
  otherBusinessId = (await createTenant(t.app, 'Other')).businessId;
  userId = (await createUser(t.app, businessId, { email: 'agent@acme.test', password: 'correct horse', role: 'agent' }))
    .id;
  browser = await signIn(t.app, 'agent@acme.test', 'correct horse');
  await createUser(t.app, businessId, { email: 'admin@acme.test', password: 'correct horse', role: 'admin' });
  admin = await signIn(t.app, 'admin@acme.test', 'correct horse');
});
afterAll(() => t.close());

const errorCode = (res: { json(): { error: { code: string } } }) => res.json().error.code;

/** A contact of the other business, which the session must never reach. */
const foreignContact = () => insertContact(db(), otherBusinessId, { first_name: 'Foreign', email: 'x@other.test' });

describe('GET /dashboard/api/contacts', () => {
  let ids: string[];
  beforeAll(async () => {
    const bid = (await createTenant(t.app, 'Lister')).businessId;
    await createUser(t.app, bid, { email: 'lister@lister.test', password: 'correct horse' });
    listBrowser = await signIn(t.app, 'lister@lister.test', 'correct horse');
    ids = [];
    for (let i = 0; i < 5; i++)
      ids.push((await insertContact(db(), bid, { first_name: `P${i}`, created_at: at(i), updated_at: at(i) })).id);
    await insertContact(db(), otherBusinessId, { first_name: 'Hidden', created_at: at(10), updated_at: at(10) });
  });
  let listBrowser: Browser;

  it('pages newest first by cursor, without offsets, and only the business’s contacts', async () => {
    const first = await call(t.app, listBrowser, 'GET', '/contacts?limit=2');
    expect(first.statusCode).toBe(200);
    expect(first.json().contacts.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    const cursor = first.json().next_cursor as string;
    const second = await call(t.app, listBrowser, 'GET', `/contacts?limit=2&cursor=${cursor}`);
    expect(second.json().contacts.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
    const third = await call(t.app, listBrowser, 'GET', `/contacts?limit=2&cursor=${second.json().next_cursor}`);
    expect(third.json()).toMatchObject({ contacts: [{ id: ids[0], name: 'P0 Lovelace' }], next_cursor: null });
  });

  it('refuses another business’s cursor, a search with a cursor, bad limits and unknown parameters', async () => {
    const mine = (await call(t.app, listBrowser, 'GET', '/contacts?limit=1')).json().next_cursor as string;
    const replayed = await call(t.app, browser, 'GET', `/contacts?cursor=${mine}`);
    expect(replayed.statusCode).toBe(400);
    expect(errorCode(replayed)).toBe('validation_error');
    for (const query of [`q=a&cursor=${mine}`, 'limit=0', 'limit=101', 'offset=2', 'q=', 'cursor=nonsense']) {
      const res = await call(t.app, listBrowser, 'GET', `/contacts?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code, query).toBe('validation_error');
    }
  });
});

describe('searching with q', () => {
  it('finds by email in any case, phone with country variants, external id and aliases, as the public search', async () => {
    const ada = await insertContact(db(), businessId, {
      email: 'Ada@Search.test',
      phone_number: '5491155550001',
      external_id: 'crm-ada',
    });
    await insertAliases(db(), { business_id: businessId, contact_id: ada.id, kind: 'email', value: 'old@search.test' });
    await insertContact(db(), otherBusinessId, { email: 'ada@search.test' });
    for (const q of ['ada@search.test', '+54 11 5555 0001', '5491155550001', 'crm-ada', 'OLD@search.test']) {
      const res = await call(t.app, browser, 'GET', `/contacts?q=${encodeURIComponent(q)}`);
      expect(res.statusCode, q).toBe(200);
      expect(res.json(), q).toEqual({
        contacts: [
          {
            id: ada.id,
            name: 'Ada Lovelace',
            email: 'Ada@Search.test',
            phone_number: '5491155550001',
            external_id: 'crm-ada',
            tags: [],
            created_at: ada.created_at,
          },
        ],
        next_cursor: null,
      });
    }
    const none = await call(t.app, browser, 'GET', '/contacts?q=nobody');
    expect(none.json()).toEqual({ contacts: [], next_cursor: null });
  });
});

describe('GET /dashboard/api/contacts/:id', () => {
  it('answers the fields, custom fields by their definitions, aliases and conversations newest first', async () => {
    const bid = (await createTenant(t.app, 'Profile')).businessId;
    await createUser(t.app, bid, { email: 'p@profile.test', password: 'correct horse' });
    const b = await signIn(t.app, 'p@profile.test', 'correct horse');
    await insertContactField(db(), bid, 'plan', 'Plan');
    await insertContactField(db(), bid, 'city', 'City');
    const contact = await insertContact(db(), bid, {
      email: 'grace@profile.test',
      tags: ['vip'],
      custom_fields: { plan: 'gold', loose: 3 },
    });
    await insertAliases(db(), { business_id: bid, contact_id: contact.id, kind: 'phone', value: '5491100000000' });
    await db()
      .insertInto('contact_identities')
      .values({
        business_id: bid,
        kind: 'page_scoped_id',
        value: '7310000000000777',
        contact_id: contact.id,
        contact_created_at: contact.created_at,
      })
      .execute();
    const older = await insertConversation(db(), bid, contact.id, { created_at: at(1) });
    const newer = await insertConversation(db(), bid, contact.id, { created_at: at(2), closed_at: at(3) });
    await insertMessage(db(), bid, newer, { created_at: at(2) });

    const res = await call(t.app, b, 'GET', `/contacts/${contact.id}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.contact).toMatchObject({
      id: contact.id,
      name: 'Ada Lovelace',
      email: 'grace@profile.test',
      tags: ['vip'],
      assigned_user: null,
      is_test: false,
    });
    expect(body.custom_fields).toEqual([
      { key: 'plan', name: 'Plan', value: 'gold' },
      { key: 'city', name: 'City', value: null },
      { key: 'loose', name: null, value: 3 },
    ]);
    expect(body.aliases).toEqual([{ kind: 'phone', value: '5491100000000' }]);
    expect(body.identities).toEqual([{ kind: 'page_scoped_id', value: '7310000000000777' }]);
    expect(body.conversations.map((c: { id: string }) => c.id)).toEqual([newer.id, older.id]);
    expect(body.conversations[0]).toMatchObject({ message_count: 1, closed_at: at(3) });
    expect(body.conversation_count).toBe(2);
  });

  it('answers 404 for another business’s contact and 400 for an id that is no UUID', async () => {
    const foreign = await foreignContact();
    for (const [who, path] of [
      [browser, `/contacts/${foreign.id}`],
      [browser, `/contacts/${newId()}`],
      [admin, `/contacts/${foreign.id}/deletion`],
    ] as const) {
      const res = await call(t.app, who, 'GET', path);
      expect(res.statusCode, path).toBe(404);
      expect(errorCode(res)).toBe('not_found');
    }
    const bad = await call(t.app, browser, 'GET', '/contacts/not-a-uuid');
    expect(bad.statusCode).toBe(400);
    expect(errorCode(bad)).toBe('validation_error');
  });
});

describe('PATCH /dashboard/api/contacts/:id', () => {
  it('edits by the public update’s rules and records the user in the event', async () => {
    const contact = await insertContact(db(), businessId, { custom_fields: { plan: 'free', gone: 1 } });
    const res = await call(t.app, browser, 'PATCH', `/contacts/${contact.id}`, {
      name: 'Grace Brewster Hopper',
      tags: ['a', 'b', 'a'],
      custom_fields: { plan: 'gold', gone: null },
      assigned_user: 'agent@acme.test',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().contact).toMatchObject({
      first_name: 'Grace',
      last_name: 'Brewster Hopper',
      tags: ['a', 'b'],
      assigned_user: 'agent@acme.test',
    });
    expect(res.json().custom_fields).toEqual([{ key: 'plan', name: null, value: 'gold' }]);
    const event = await db()
      .selectFrom('events')
      .select(['actor_type', 'user_id', 'data'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contact.id)
      .where('type', '=', 'contact_field_changed')
      .executeTakeFirstOrThrow();
    expect(event).toMatchObject({ actor_type: 'human', user_id: userId, data: { source: 'dashboard' } });
  });

  it('refuses bad input and unknown fields with 400, another business’s contact with 404', async () => {
    const contact = await insertContact(db(), businessId);
    const bad: unknown[] = [
      { email: 'new@acme.test' },
      { name: '' },
      { tags: [''] },
      { custom_fields: { 'bad key': 1 } },
      { assigned_user: 'nobody@acme.test' },
      { assigned_user: 'agent@acme.test', unassign_user: true },
    ];
    for (const payload of bad) {
      const res = await call(t.app, browser, 'PATCH', `/contacts/${contact.id}`, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(errorCode(res)).toBe('validation_error');
    }
    const foreign = await foreignContact();
    const res = await call(t.app, browser, 'PATCH', `/contacts/${foreign.id}`, { name: 'Mine now' });
    expect(res.statusCode).toBe(404);
    const after = await db()
      .selectFrom('contacts')
      .select('first_name')
      .where('id', '=', foreign.id)
      .executeTakeFirst();
    expect(after?.first_name).toBe('Foreign');
  });
});

describe('POST /dashboard/api/contacts/merge', () => {
  it('merges with the per-field choices by the public merge’s rules', async () => {
    const survivor = await insertContact(db(), businessId, {
      first_name: 'Keep',
      email: 'keep@merge.test',
      tags: ['s'],
    });
    const loser = await insertContact(db(), businessId, {
      first_name: 'Chosen',
      email: 'lose@merge.test',
      phone_number: '15550001111',
      tags: ['l'],
    });
    const conversation = await insertConversation(db(), businessId, loser.id);
    const res = await call(t.app, browser, 'POST', '/contacts/merge', {
      survivor_id: survivor.id,
      loser_id: loser.id,
      field_choices: { first_name: 'loser', email: 'survivor' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, survivor_id: survivor.id });
    const page = (await call(t.app, browser, 'GET', `/contacts/${survivor.id}`)).json();
    expect(page.contact).toMatchObject({
      first_name: 'Chosen',
      email: 'keep@merge.test',
      phone_number: '15550001111',
      tags: ['s', 'l'],
    });
    expect(page.aliases).toEqual([{ kind: 'email', value: 'lose@merge.test' }]);
    expect(page.conversations.map((c: { id: string }) => c.id)).toEqual([conversation.id]);
    expect((await call(t.app, browser, 'GET', `/contacts/${loser.id}`)).statusCode).toBe(404);
    const event = await db()
      .selectFrom('events')
      .select(['actor_type', 'user_id'])
      .where('contact_id', '=', survivor.id)
      .where('type', '=', 'contact_field_changed')
      .executeTakeFirstOrThrow();
    expect(event).toEqual({ actor_type: 'human', user_id: userId });
  });

  it('refuses the same contact twice, unknown fields and choices with 400, another business’s contact with 404', async () => {
    const mine = await insertContact(db(), businessId);
    const other = await insertContact(db(), businessId);
    const foreign = await foreignContact();
    const bad: unknown[] = [
      { survivor_id: mine.id, loser_id: mine.id },
      { survivor_id: mine.id, loser_id: other.id, extra: 1 },
      { survivor_id: mine.id, loser_id: other.id, field_choices: { phone_number: 'loser' } },
      { survivor_id: mine.id, loser_id: other.id, field_choices: { email: 'both' } },
      { survivor_id: mine.id, loser_id: 'nope' },
      { survivor_id: mine.id },
    ];
    for (const payload of bad) {
      const res = await call(t.app, browser, 'POST', '/contacts/merge', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(errorCode(res)).toBe('validation_error');
    }
    for (const payload of [
      { survivor_id: mine.id, loser_id: foreign.id },
      { survivor_id: foreign.id, loser_id: mine.id },
    ]) {
      const res = await call(t.app, browser, 'POST', '/contacts/merge', payload);
      expect(res.statusCode).toBe(404);
      expect(errorCode(res)).toBe('not_found');
    }
    const still = await db().selectFrom('contacts').select('id').where('id', 'in', [mine.id, foreign.id]).execute();
    expect(still).toHaveLength(2);
  });
});

describe('deleting a contact', () => {
  it('is for admins and owners: an agent gets 403 for the preview and the deletion, and the contact stays', async () => {
    const contact = await insertContact(db(), businessId, { first_name: 'Kept' });
    for (const [method, path] of [
      ['GET', `/contacts/${contact.id}/deletion`],
      ['DELETE', `/contacts/${contact.id}`],
    ] as const) {
      const res = await call(t.app, browser, method, path);
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(errorCode(res)).toBe('forbidden');
    }
    expect((await call(t.app, browser, 'GET', `/contacts/${contact.id}`)).json().contact).toMatchObject({
      first_name: 'Kept',
    });
    // Merging stays open to agents.
    const twin = await insertContact(db(), businessId, { first_name: 'Twin' });
    const merged = await call(t.app, browser, 'POST', '/contacts/merge', {
      survivor_id: contact.id,
      loser_id: twin.id,
    });
    expect(merged.statusCode, merged.body).toBe(200);
  });

  it('previews the conversations, messages, events and attachments that go, then deletes them', async () => {
    const contact = await insertContact(db(), businessId);
    const conversation = await insertConversation(db(), businessId, contact.id);
    const message = await insertMessage(db(), businessId, conversation);
    await insertMessage(db(), businessId, conversation);
    await db()
      .insertInto('media')
      .values({ business_id: businessId, message_id: message.id, content_type: 'image/png' })
      .execute();
    await call(t.app, browser, 'PATCH', `/contacts/${contact.id}`, { tags: ['x'] });

    const preview = await call(t.app, admin, 'GET', `/contacts/${contact.id}/deletion`);
    expect(preview.statusCode).toBe(200);
    expect(preview.json()).toEqual({ contact_id: contact.id, conversations: 1, messages: 2, events: 1, media: 1 });

    const res = await call(t.app, admin, 'DELETE', `/contacts/${contact.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, contact_id: contact.id });
    expect((await call(t.app, admin, 'GET', `/contacts/${contact.id}`)).statusCode).toBe(404);
    const left = await db()
      .selectFrom('messages')
      .select('id')
      .where('conversation_id', '=', conversation.id)
      .execute();
    expect(left).toEqual([]);
  });

  it('answers 404 for another business’s contact and keeps it; 400 for an id that is no UUID', async () => {
    const foreign = await foreignContact();
    const res = await call(t.app, admin, 'DELETE', `/contacts/${foreign.id}`);
    expect(res.statusCode).toBe(404);
    expect(
      await db().selectFrom('contacts').select('id').where('id', '=', foreign.id).executeTakeFirst(),
    ).toBeDefined();
    expect((await call(t.app, admin, 'DELETE', '/contacts/123')).statusCode).toBe(400);
  });
});

describe('CSRF and sessions', () => {
  it('refuses every write without the CSRF header (403) and every route without a session (401)', async () => {
    const contact = await insertContact(db(), businessId, { first_name: 'Untouched' });
    const other = await insertContact(db(), businessId);
    const writes: [string, string, unknown][] = [
      ['PATCH', `/contacts/${contact.id}`, { name: 'Changed' }],
      ['POST', '/contacts/merge', { survivor_id: other.id, loser_id: contact.id }],
      ['DELETE', `/contacts/${contact.id}`, undefined],
    ];
    for (const [method, path, payload] of writes) {
      const res = await call(t.app, browser, method, path, payload, { 'x-csrf-token': undefined });
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(errorCode(res)).toBe('csrf_failed');
    }
    const row = await db().selectFrom('contacts').select('first_name').where('id', '=', contact.id).executeTakeFirst();
    expect(row?.first_name).toBe('Untouched');
    const anonymous = await t.app.inject({ method: 'GET', url: `/dashboard/api/contacts/${contact.id}` });
    expect(anonymous.statusCode).toBe(401);
  });
});
