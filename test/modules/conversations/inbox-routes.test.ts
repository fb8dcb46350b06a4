import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { at, insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';

let t: TestApp;
let browser: Browser;
let businessId: string;
let userId: string;
/** A conversation of the signed-in business, with two inbound messages, assigned to the user. */
let mine: { id: string; contact_id: string; channel: string };
let firstMessage: string;
/** A conversation of another business, with a message. */
let theirs: { id: string };
let theirMessage: string;

const PASSWORD = 'inbox-routes-password';

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  const db = t.database.db;
  ({ businessId } = await createTenant(t.app));
  ({ id: userId } = await createUser(t.app, businessId, { email: 'inbox@example.com', password: PASSWORD }));
  browser = await signIn(t.app, 'inbox@example.com', PASSWORD);
  const contact = await insertContact(db, businessId, { first_name: 'Lena', last_name: 'Inbox' });
  mine = await insertConversation(db, businessId, contact.id, { created_at: at(0), assigned_user_id: userId });
  firstMessage = (await insertMessage(db, businessId, mine, { created_at: at(1) })).id;
  await insertMessage(db, businessId, mine, { created_at: at(2), text: 'are you there?' });

  const other = await createTenant(t.app, 'Other');
  const stranger = await insertContact(db, other.businessId);
  theirs = await insertConversation(db, other.businessId, stranger.id);
  theirMessage = (
    await insertMessage(db, other.businessId, { ...theirs, contact_id: stranger.id, channel: 'whatsapp' })
  ).id;
});
afterAll(() => t.close());

const get = (url: string) => call(t.app, browser, 'GET', url);

describe('GET /dashboard/api/conversations', () => {
  it("lists the business's conversations with the signed-in user's unread counts", async () => {
    const res = await get('/conversations?assignee=me&limit=10');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.next_cursor).toBeNull();
    expect(body.conversations).toHaveLength(1);
    expect(body.conversations[0]).toMatchObject({
      id: mine.id,
      contact: { first_name: 'Lena', last_name: 'Inbox' },
      last_message: { text: 'are you there?', direction: 'inbound', created_at: at(2) },
      unread_count: 2,
      closed: false,
    });
    expect((await get('/conversations?q=lena')).json().conversations.map((c: { id: string }) => c.id)).toEqual([
      mine.id,
    ]);
  });

  it('refuses bad values and unknown fields with the error body', async () => {
    for (const [query, path] of [
      ['status=pending', '/status'],
      ['limit=0', '/limit'],
      ['limit=101', '/limit'],
      ['channel=fax', '/channel'],
      ['assignee=someone', '/assignee'],
      ['team=me', '/team'],
      ['control=robot', '/control'],
      [`q=${'a'.repeat(201)}`, '/q'],
      ['q=', '/q'],
      ['sort=oldest', '/'],
    ]) {
      const res = await get(`/conversations?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code, query).toBe('validation_error');
      expect(res.json().error.details[0].path, query).toBe(path);
    }
    expect((await get('/conversations?sort=oldest')).json().error.details[0].message).toBe('unknown field "sort"');
    const cursor = await get('/conversations?cursor=not-a-cursor');
    expect(cursor.statusCode).toBe(400);
    expect(cursor.json().error).toMatchObject({ code: 'validation_error', message: 'invalid cursor' });
    // A user of another business, as an assignee: not a user or team of this one.
    const stranger = await createUser(t.app, (await createTenant(t.app, 'Third')).businessId, {
      email: 'third@example.com',
    });
    const unknown = await get(`/conversations?assignee=${stranger.id}`);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.details).toEqual([
      { location: 'querystring', path: '/assignee', message: 'unknown user or team' },
    ]);
    const team = await get(`/conversations?team=${stranger.id}`);
    expect(team.statusCode).toBe(400);
    expect(team.json().error.details).toEqual([{ location: 'querystring', path: '/team', message: 'unknown team' }]);
  });

  it('needs a session', async () => {
    for (const url of ['/conversations', `/conversations/${mine.id}`, `/conversations/${mine.id}/thread`, '/unread']) {
      const res = await t.app.inject({ method: 'GET', url: `/dashboard/api${url}` });
      expect(res.statusCode, url).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });
});

describe('GET /dashboard/api/conversations/:id and its thread', () => {
  it('answers a conversation of the business, with its contact and its thread', async () => {
    const one = await get(`/conversations/${mine.id}`);
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json()).toMatchObject({
      conversation: { id: mine.id, message_count: 2, unread_count: 2 },
      contact: { id: mine.contact_id, first_name: 'Lena', tags: [], custom_fields: {} },
    });
    const thread = await get(`/conversations/${mine.id}/thread?limit=1`);
    expect(thread.statusCode, thread.body).toBe(200);
    expect(thread.json().items).toEqual([expect.objectContaining({ kind: 'message', text: 'are you there?' })]);
    const older = await get(`/conversations/${mine.id}/thread?limit=1&cursor=${thread.json().next_cursor}`);
    expect(older.json()).toMatchObject({ items: [{ id: firstMessage }], next_cursor: null });
  });

  it("answers 404 for another business's conversation, 400 for a bad id or query", async () => {
    for (const url of [`/conversations/${theirs.id}`, `/conversations/${theirs.id}/thread`]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    for (const url of [
      '/conversations/not-a-uuid',
      '/conversations/not-a-uuid/thread',
      `/conversations/${mine.id}/thread?limit=101`,
      `/conversations/${mine.id}/thread?before=now`,
      `/conversations/${mine.id}/thread?cursor=forged`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });
});

describe('POST /dashboard/api/conversations/:id/read and GET /dashboard/api/unread', () => {
  it('moves the read position with the CSRF token, and the counts follow', async () => {
    expect((await get('/unread')).json()).toEqual({ unread_conversations: 1 });
    const refused = await call(
      t.app,
      browser,
      'POST',
      `/conversations/${mine.id}/read`,
      {},
      { 'x-csrf-token': undefined },
    );
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('csrf_failed');

    const first = await call(t.app, browser, 'POST', `/conversations/${mine.id}/read`, { message_id: firstMessage });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({
      conversation_id: mine.id,
      last_read_message_id: firstMessage,
      unread_count: 1,
    });
    const all = await call(t.app, browser, 'POST', `/conversations/${mine.id}/read`);
    expect(all.json()).toMatchObject({ unread_count: 0 });
    expect((await get('/unread')).json()).toEqual({ unread_conversations: 0 });
    expect((await get(`/conversations/${mine.id}`)).json().conversation.unread_count).toBe(0);
  });

  it("refuses another business's conversation or message, bad bodies and unknown fields", async () => {
    const post = (id: string, payload?: unknown) => call(t.app, browser, 'POST', `/conversations/${id}/read`, payload);
    const notFound = [await post(theirs.id), await post(mine.id, { message_id: theirMessage })];
    for (const res of notFound) {
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    for (const payload of [{ message_id: 'x' }, { message_id: firstMessage, at: 'now' }, [firstMessage]]) {
      const res = await post(mine.id, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });
});
