import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { insertMessage } from '../../helpers/factories.ts';
import { aug, bulkMessages, contactWithConversation, walk, WINDOW } from './export-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '100000', RATE_LIMIT_EVENTS_PER_MINUTE: '100000' });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const get = (url: string, headers = tenant.headers) => t.app.inject({ method: 'GET', url, headers });

describe('GET /messages', () => {
  it('exports the window oldest first in the export form, with agent, user and media', async () => {
    const db = t.database.db;
    const { conversation } = await contactWithConversation(db, tenant.businessId);
    const agent = await db
      .insertInto('agents')
      .values({ business_id: tenant.businessId, id: newId(), name: 'Sofia' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const user = await db
      .insertInto('users')
      .values({ business_id: tenant.businessId, id: newId(), email: 'ana@acme.test', name: 'Ana' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const inbound = await insertMessage(db, tenant.businessId, conversation, {
      created_at: aug(10, 1),
      type: 'image',
      text: '',
    });
    await db
      .insertInto('media')
      .values({ business_id: tenant.businessId, message_id: inbound.id, filename: 'a.jpg', content_type: 'image/jpeg' })
      .execute();
    const byAgent = await insertMessage(db, tenant.businessId, conversation, {
      created_at: aug(20),
      direction: 'outbound',
      sender_type: 'ai_agent',
      agent_id: agent.id,
      status: 'DELIVERED',
    });
    const byUser = await insertMessage(db, tenant.businessId, conversation, {
      created_at: aug(5),
      direction: 'outbound',
      sender_type: 'human',
      user_id: user.id,
      status: 'ERROR',
      error: 'undeliverable',
      reply_to_id: inbound.id,
    });
    await insertMessage(db, tenant.businessId, conversation, { created_at: '2026-07-31T23:59:59.999999Z' });
    await insertMessage(db, tenant.businessId, conversation, { created_at: '2026-08-31T00:00:00.000000Z' });

    const res = await get(`/external/v2/messages?${WINDOW}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.next_cursor).toBeNull();
    expect(body.messages.map((m: { id: string }) => m.id)).toEqual([byUser.id, inbound.id, byAgent.id]);
    const media = await db
      .selectFrom('media')
      .select('id')
      .where('message_id', '=', inbound.id)
      .executeTakeFirstOrThrow();
    expect(body.messages[1]).toEqual({
      id: inbound.id,
      conversation_id: conversation.id,
      contact_id: conversation.contact_id,
      channel: 'whatsapp',
      direction: 'inbound',
      sender_type: 'contact',
      agent: null,
      user: null,
      type: 'image',
      text: '',
      media: { id: media.id, filename: 'a.jpg', content_type: 'image/jpeg' },
      reply_to_id: null,
      status: 'RECEIVED',
      error: null,
      created_at: aug(10, 1),
    });
    expect(body.messages[2]).toMatchObject({
      sender_type: 'ai_agent',
      agent: { id: agent.id, name: 'Sofia' },
      user: null,
    });
    expect(body.messages[0]).toMatchObject({
      sender_type: 'human',
      user: { id: user.id, name: 'Ana', email: 'ana@acme.test' },
      error: 'undeliverable',
      reply_to_id: inbound.id,
      status: 'ERROR',
    });
    // Another business sees none of it.
    expect((await get(`/external/v2/messages?${WINDOW}`, other.headers)).json()).toEqual({
      messages: [],
      next_cursor: null,
    });
  });

  it('writes each record as the timeline does: any text escaped, nested objects, microseconds, JSON content type', async () => {
    const db = t.database.db;
    const tenantT = await createTenant(t.app, 'Texts');
    const { contact, conversation } = await contactWithConversation(db, tenantT.businessId);
    const agent = await db
      .insertInto('agents')
      .values({ business_id: tenantT.businessId, id: newId(), name: 'Sofía "the bot" \\ 🤖' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const user = await db
      .insertInto('users')
      .values({ business_id: tenantT.businessId, id: newId(), email: "o'neil@acme.test", name: 'Ana\tMaría' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const texts = [
      'quote " backslash \\ slash /',
      'lines\r\nand\ttabs\u0001\u001f\u007f',
      'unicode ñ € 𝄞 \u2028 \u2029 <script>',
      '',
    ];
    const ids: string[] = [];
    for (const [i, text] of texts.entries()) {
      const m = await insertMessage(db, tenantT.businessId, conversation, {
        created_at: aug(100 + i, 999),
        text,
        type: i === 3 ? 'document' : 'text',
        direction: 'outbound',
        sender_type: i % 2 ? 'human' : 'ai_agent',
        agent_id: i % 2 ? null : agent.id,
        user_id: i % 2 ? user.id : null,
        error: i === 1 ? 'bad "number"\n' : null,
        status: i === 1 ? 'ERROR' : 'DELIVERED',
      });
      ids.push(m.id);
    }
    // The first file attached is the one exported. (Attached a microsecond apart: PGlite's clock
    // counts milliseconds, so two inserts in a row may get the same now().)
    await db
      .insertInto('media')
      .values({
        business_id: tenantT.businessId,
        message_id: ids[3],
        filename: 'a "b".pdf',
        content_type: 'application/pdf',
        created_at: '2026-08-20T10:00:00.000001Z',
      })
      .execute();
    await db
      .insertInto('media')
      .values({
        business_id: tenantT.businessId,
        message_id: ids[3],
        filename: null,
        content_type: null,
        created_at: '2026-08-20T10:00:00.000002Z',
      })
      .execute();
    const res = await get(`/external/v2/messages?${WINDOW}`, tenantT.headers);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const exported = res.json().messages;
    expect(exported.map((m: { id: string }) => m.id)).toEqual(ids);
    expect(exported.map((m: { text: string }) => m.text)).toEqual(texts);
    expect(exported[3].media).toEqual({
      id: expect.any(Number),
      filename: 'a "b".pdf',
      content_type: 'application/pdf',
    });
    expect(exported[1]).toMatchObject({
      user: { id: user.id, name: 'Ana\tMaría', email: "o'neil@acme.test" },
      agent: null,
      error: 'bad "number"\n',
      created_at: aug(101, 999),
    });
    // The timeline maps the same rows in the service (exports.mappers.ts): both forms must agree.
    const timeline = (
      await t.app.inject({
        method: 'GET',
        url: `/external/v2/contacts/${contact.id}/timeline`,
        headers: tenantT.headers,
      })
    ).json();
    const mapped = timeline.items
      .filter((i: { kind: string }) => i.kind === 'message')
      .map(({ kind: _, ...m }: { kind: string }) => m)
      .reverse();
    expect(exported).toEqual(mapped);
  });

  it('walks a window exactly once, with ties on one microsecond and inserts during the walk', async () => {
    const db = t.database.db;
    const tenantB = await createTenant(t.app, 'Walk');
    const { conversation } = await contactWithConversation(db, tenantB.businessId);
    const tie = '2026-08-02T12:00:00.123456Z';
    const rows = [
      ...Array.from({ length: 700 }, () => ({ created_at: tie })),
      ...Array.from({ length: 600 }, (_, i) => ({ created_at: aug(86400 * 3 + i, i % 1000) })),
    ];
    const inserted = await bulkMessages(db, tenantB.businessId, conversation, rows);
    const late: string[] = [];
    const { records, pages } = await walk(t, tenantB, 'messages', `${WINDOW}&limit=97`, async (page) => {
      if (page === 3 || page === 9) {
        // Records arriving during the walk, later than its position: each is served exactly once.
        const added = await bulkMessages(db, tenantB.businessId, conversation, [
          { created_at: aug(86400 * 20 + page) },
        ]);
        late.push(added[0].id);
      }
    });
    const ids = records.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set([...inserted.map((r) => r.id), ...late]));
    expect(pages).toBe(Math.ceil(ids.length / 97));
    const keys = records.map((r) => `${r.created_at}|${r.id}`);
    expect(keys).toEqual([...keys].sort());
  });

  it('serves a full last page with a cursor and then an empty page with null', async () => {
    const tenantC = await createTenant(t.app, 'Exact');
    const { conversation } = await contactWithConversation(t.database.db, tenantC.businessId);
    await bulkMessages(
      t.database.db,
      tenantC.businessId,
      conversation,
      Array.from({ length: 4 }, (_, i) => ({ created_at: aug(i) })),
    );
    const first = (await get(`/external/v2/messages?${WINDOW}&limit=4`, tenantC.headers)).json();
    expect(first.messages).toHaveLength(4);
    expect(first.next_cursor).toBeNull();
    const two = (await get(`/external/v2/messages?${WINDOW}&limit=2`, tenantC.headers)).json();
    expect(two.next_cursor).toEqual(expect.any(String));
    const rest = (
      await get(
        `/external/v2/messages?${WINDOW}&limit=2&cursor=${encodeURIComponent(two.next_cursor)}`,
        tenantC.headers,
      )
    ).json();
    expect(rest.messages).toHaveLength(2);
    expect(rest.next_cursor).toBeNull();
  });

  it('filters by channel', async () => {
    const tenantD = await createTenant(t.app, 'Channels');
    const db = t.database.db;
    const wa = await contactWithConversation(db, tenantD.businessId, 'whatsapp');
    const ig = await contactWithConversation(db, tenantD.businessId, 'instagram');
    const em = await contactWithConversation(db, tenantD.businessId, 'email');
    for (const x of [wa, ig, em]) await insertMessage(db, tenantD.businessId, x.conversation, { created_at: aug(100) });
    const res = (await get(`/external/v2/messages?${WINDOW}&channel=instagram,email`, tenantD.headers)).json();
    expect(res.messages.map((m: { channel: string }) => m.channel).sort()).toEqual(['email', 'instagram']);
  });

  it('defaults until to now and accepts a date alone', async () => {
    const since = new Date(Date.now() - 86400_000).toISOString().slice(0, 10);
    const tenantE = await createTenant(t.app, 'Now');
    const { conversation } = await contactWithConversation(t.database.db, tenantE.businessId);
    // A second ago: `until` defaults to the request's now, and leaves out what is created in its millisecond.
    const m = await insertMessage(t.database.db, tenantE.businessId, conversation, {
      created_at: new Date(Date.now() - 1000).toISOString(),
    });
    const res = await get(`/external/v2/messages?since=${since}`, tenantE.headers);
    expect(res.statusCode).toBe(200);
    expect(res.json().messages.map((x: { id: string }) => x.id)).toEqual([m.id]);
  });

  describe('errors', () => {
    const cases: [string, string][] = [
      ['since missing', ''],
      ['since malformed', 'since=yesterday'],
      ['until before since', 'since=2026-08-10T00:00:00Z&until=2026-08-01T00:00:00Z'],
      ['until equal to since', 'since=2026-08-10T00:00:00.000001Z&until=2026-08-10T00:00:00.000001Z'],
      ['window over 31 days', 'since=2026-08-01T00:00:00Z&until=2026-09-01T00:00:00.000001Z'],
      ['unknown channel', `${WINDOW}&channel=whatsapp,fax`],
      ['empty channel list', `${WINDOW}&channel=,`],
      ['limit over 500', `${WINDOW}&limit=501`],
      ['limit zero', `${WINDOW}&limit=0`],
      ['limit not a number', `${WINDOW}&limit=lots`],
      ['unknown parameter', `${WINDOW}&types=agent_assigned`],
      ['garbage cursor', `${WINDOW}&cursor=abc`],
    ];
    it.each(cases)('400 for %s', async (_name, query) => {
      const res = await get(`/external/v2/messages?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    });

    it('accepts exactly 31 days', async () => {
      expect(
        (await get('/external/v2/messages?since=2026-08-01T00:00:00Z&until=2026-09-01T00:00:00Z')).statusCode,
      ).toBe(200);
    });

    it('400 for a cursor tampered with, used with other filters, or by another business', async () => {
      const { conversation } = await contactWithConversation(t.database.db, tenant.businessId);
      await bulkMessages(t.database.db, tenant.businessId, conversation, [
        { created_at: aug(1) },
        { created_at: aug(2) },
        { created_at: aug(3) },
      ]);
      const first = (await get(`/external/v2/messages?${WINDOW}&limit=1`)).json();
      const cursor: string = first.next_cursor;
      expect(
        (await get(`/external/v2/messages?${WINDOW}&limit=1&cursor=${encodeURIComponent(cursor)}`)).statusCode,
      ).toBe(200);
      const [body, sig] = cursor.split('.');
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
      const forged = `${Buffer.from(JSON.stringify({ ...payload, t: '2026-08-01T00:00:00.000000Z' })).toString('base64url')}.${sig}`;
      for (const url of [
        `/external/v2/messages?${WINDOW}&cursor=${encodeURIComponent(forged)}`,
        `/external/v2/messages?${WINDOW}&cursor=${encodeURIComponent(cursor.slice(0, -2) + 'AA')}`,
        `/external/v2/messages?${WINDOW}&channel=whatsapp&cursor=${encodeURIComponent(cursor)}`,
        `/external/v2/messages?since=2026-08-02T00:00:00Z&until=2026-08-31T00:00:00Z&cursor=${encodeURIComponent(cursor)}`,
        `/external/v2/events?${WINDOW}&cursor=${encodeURIComponent(cursor)}`,
      ]) {
        const res = await get(url);
        expect(res.statusCode, url).toBe(400);
        expect(res.json().error.message).toBe('invalid cursor');
      }
      const foreign = await get(`/external/v2/messages?${WINDOW}&cursor=${encodeURIComponent(cursor)}`, other.headers);
      expect(foreign.statusCode).toBe(400);
    });

    it('401 without a key', async () => {
      const res = await t.app.inject({ method: 'GET', url: `/external/v2/messages?${WINDOW}` });
      expect(res.statusCode).toBe(401);
    });
  });
});
