import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { insertMessage } from '../../helpers/factories.ts';
import { aug, contactWithConversation, insertEvent, WINDOW } from './export-helpers.ts';
import { postImport, sampleRecords } from '../import/import-helpers.ts';
import { wamid } from '../../helpers/fake-graph-api.ts';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '100000', RATE_LIMIT_EVENTS_PER_MINUTE: '100000' });
});
afterAll(() => t.close());

const ids = async (tenant: Tenant, path: 'messages' | 'events', extra = '') => {
  const res = await t.app.inject({
    method: 'GET',
    url: `/external/v2/${path}?${WINDOW}${extra}`,
    headers: tenant.headers,
  });
  expect(res.statusCode).toBe(200);
  return (res.json()[path] as { id: string }[]).map((r) => r.id).sort();
};

describe('rule 4: test contacts, internal chats and groups are left out', () => {
  it('excludes them at write time and follows later changes', async () => {
    const tenant = await createTenant(t.app, 'Rule4');
    const db = t.database.db;
    const b = tenant.businessId;
    const real = await contactWithConversation(db, b);
    const test = await contactWithConversation(db, b, 'whatsapp', { is_test: true });
    const internal = await contactWithConversation(db, b, 'whatsapp', {}, { is_internal: true });
    const group = await contactWithConversation(db, b, 'whatsapp', {}, { is_group: true });
    const msgs = [];
    for (const x of [real, test, internal, group])
      msgs.push(await insertMessage(db, b, x.conversation, { created_at: aug(50) }));
    const evs = [];
    for (const x of [real, test, internal, group])
      evs.push(
        await insertEvent(db, b, {
          contact_id: x.contact.id,
          conversation_id: x.conversation.id,
          channel: 'whatsapp',
          created_at: aug(60),
        }),
      );
    const fieldTest = await insertEvent(db, b, {
      contact_id: test.contact.id,
      type: 'contact_field_changed',
      data: JSON.stringify({ source: 'api', changes: [] }),
      created_at: aug(61),
    });
    const internalType = await insertEvent(db, b, {
      contact_id: real.contact.id,
      conversation_id: real.conversation.id,
      channel: 'whatsapp',
      type: 'order_created',
      created_at: aug(62),
    });

    expect(await ids(tenant, 'messages')).toEqual([msgs[0].id]);
    expect(await ids(tenant, 'events')).toEqual([evs[0].id]);
    void fieldTest;
    void internalType;

    // The real contact becomes a test contact; the group stops being one.
    await db
      .updateTable('contacts')
      .set({ is_test: true })
      .where('business_id', '=', b)
      .where('id', '=', real.contact.id)
      .execute();
    await db
      .updateTable('conversations')
      .set({ is_group: false })
      .where('business_id', '=', b)
      .where('id', '=', group.conversation.id)
      .execute();
    expect(await ids(tenant, 'messages')).toEqual([msgs[3].id]);
    expect(await ids(tenant, 'events')).toEqual([evs[3].id]);
  });
});

describe('rule 4 through the import', () => {
  it('leaves imported test contacts out and keeps the rest, microseconds intact', async () => {
    const tenant = await createTenant(t.app, 'Imported');
    const real = sampleRecords('real');
    const test = sampleRecords('test');
    Object.assign(test.records[0], { is_test: true, phone_number: '+56 9 4000 1234' });
    const res = await postImport(t.app, tenant.businessId, [...real.records, ...test.records]);
    expect(res.statusCode).toBe(200);
    const messages = (
      await t.app.inject({ method: 'GET', url: `/external/v2/messages?${WINDOW}`, headers: tenant.headers })
    ).json().messages;
    expect(messages.map((m: { id: string; created_at: string }) => [m.id, m.created_at])).toEqual([
      [real.messageIds[0], '2026-08-04T10:12:00.654321Z'],
      [real.messageIds[1], '2026-08-04T10:13:00.999999Z'],
    ]);
    expect(await ids(tenant, 'events')).toEqual([real.eventId]);
  });
});

describe('rule 5: one number on the Cloud API and the web client', () => {
  async function channels(b: string) {
    const number = `5511${Math.floor(Math.random() * 1e9)}`;
    const cloud = await t.database.db
      .insertInto('channels')
      .values({
        business_id: b,
        id: newId(),
        type: 'whatsapp',
        name: 'cloud',
        identifier: number,
        provider_config: '{}',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const web = await t.database.db
      .insertInto('channels')
      .values({
        business_id: b,
        id: newId(),
        type: 'whatsapp_web',
        name: 'web',
        identifier: number,
        provider_config: '{}',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { cloud, web };
  }

  it('shows a doubly recorded message once under whatsapp, whichever copy came first', async () => {
    const tenant = await createTenant(t.app, 'Rule5');
    const db = t.database.db;
    const b = tenant.businessId;
    const { cloud, web } = await channels(b);
    const viaCloud = await contactWithConversation(db, b, 'whatsapp', {}, { channel_id: cloud.id });
    const viaWeb = await db
      .insertInto('conversations')
      .values({
        business_id: b,
        id: newId(),
        contact_id: viaCloud.contact.id,
        channel: 'whatsapp_web',
        channel_id: web.id,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const m = (conv: typeof viaWeb, channelId: string, pid: string, s: number) =>
      insertMessage(db, b, conv, { channel_id: channelId, provider_message_id: pid, created_at: aug(s) });
    // Cloud first, then the web copy.
    const a1 = await m(viaCloud.conversation, cloud.id, 'wamid.A', 10);
    const a2 = await m(viaWeb, web.id, 'wamid.A', 11);
    // Web copy first, then the cloud copy.
    const b2 = await m(viaWeb, web.id, 'wamid.B', 12);
    const b1 = await m(viaCloud.conversation, cloud.id, 'wamid.B', 13);
    // Only on the web client.
    const c2 = await m(viaWeb, web.id, 'wamid.C', 14);
    const res = await t.app.inject({ method: 'GET', url: `/external/v2/messages?${WINDOW}`, headers: tenant.headers });
    const got = res.json().messages.map((x: { id: string; channel: string }) => [x.id, x.channel]);
    expect(got).toEqual([
      [a1.id, 'whatsapp'],
      [b1.id, 'whatsapp'],
      [c2.id, 'whatsapp_web'],
    ]);
    expect(await ids(tenant, 'messages', '&channel=whatsapp_web')).toEqual([c2.id]);
    void a2;
    void b2;
  });

  it('marks every web copy of Cloud API messages written in one statement', async () => {
    const tenant = await createTenant(t.app, 'Rule5many');
    const db = t.database.db;
    const b = tenant.businessId;
    const { cloud, web } = await channels(b);
    const other = await channels(b);
    const viaCloud = await contactWithConversation(db, b, 'whatsapp', {}, { channel_id: cloud.id });
    const viaWeb = await db
      .insertInto('conversations')
      .values({
        business_id: b,
        id: newId(),
        contact_id: viaCloud.contact.id,
        channel: 'whatsapp_web',
        channel_id: web.id,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const viaOtherWeb = await contactWithConversation(db, b, 'whatsapp_web', {}, { channel_id: other.web.id });
    const webCopies = [];
    for (const [i, pid] of ['wamid.M1', 'wamid.M2', 'wamid.M3'].entries())
      webCopies.push(
        await insertMessage(db, b, viaWeb, { channel_id: web.id, provider_message_id: pid, created_at: aug(i) }),
      );
    // Same provider id on another number's web client: not a copy.
    const otherNumber = await insertMessage(db, b, viaOtherWeb.conversation, {
      channel_id: other.web.id,
      provider_message_id: 'wamid.M1',
      created_at: aug(5),
    });
    const row = (pid: string | null, s: number) => ({
      business_id: b,
      id: newId(),
      conversation_id: viaCloud.conversation.id,
      contact_id: viaCloud.contact.id,
      channel: 'whatsapp',
      channel_id: cloud.id,
      provider_message_id: pid,
      direction: 'inbound' as const,
      sender_type: 'contact' as const,
      status: 'RECEIVED',
      created_at: aug(s),
    });
    const cloudRows = [row('wamid.M1', 10), row('wamid.M2', 11), row('wamid.M4', 12), row(null, 13)];
    await db.insertInto('messages').values(cloudRows).execute();
    const duplicates = await db
      .selectFrom('messages')
      .select(['id', 'duplicate'])
      .where('business_id', '=', b)
      .where('channel', '=', 'whatsapp_web')
      .execute();
    expect(Object.fromEntries(duplicates.map((d) => [d.id, d.duplicate]))).toEqual({
      [webCopies[0].id]: true,
      [webCopies[1].id]: true,
      [webCopies[2].id]: false,
      [otherNumber.id]: false,
    });
    expect(await ids(tenant, 'messages')).toEqual(
      [...cloudRows.map((r) => r.id), webCopies[2].id, otherNumber.id].sort(),
    );
  });

  it("matches a web copy by the key id the Cloud API's wamid carries, inserted either way or set by a send", async () => {
    const tenant = await createTenant(t.app, 'Rule5keys');
    const db = t.database.db;
    const b = tenant.businessId;
    const { cloud, web } = await channels(b);
    const viaCloud = await contactWithConversation(db, b, 'whatsapp', {}, { channel_id: cloud.id });
    // One conversation for both, as a number on both keeps it.
    const m = (channelId: string, pid: string | null, s: number) =>
      insertMessage(db, b, viaCloud.conversation, {
        channel: channelId === web.id ? 'whatsapp_web' : 'whatsapp',
        channel_id: channelId,
        provider_message_id: pid,
        created_at: aug(s),
      });
    // Cloud first: the web copy is a duplicate as it is written.
    const a1 = await m(cloud.id, wamid('5511999990000', '3A6D4B7F95DAE378BA7B'), 10);
    const a2 = await m(web.id, '3A6D4B7F95DAE378BA7B', 11);
    // Web first: the Cloud API's copy marks it.
    const b2 = await m(web.id, '3EB0C431C26A1916E07E', 12);
    const b1 = await m(cloud.id, wamid('5511999990000', '3EB0C431C26A1916E07E', true), 13);
    // A send's wamid arrives with its answer, after its web echo.
    const c2 = await m(web.id, 'CB6B39DAA892A1A8F8', 14);
    const c1 = await m(cloud.id, null, 15);
    await db
      .updateTable('messages')
      .set({ provider_message_id: wamid('16503879439', 'CB6B39DAA892A1A8F8', true) })
      .where('business_id', '=', b)
      .where('id', '=', c1.id)
      .execute();
    // A wamid of another key, and one that is not a wamid at all, match nothing.
    const d2 = await m(web.id, 'ABCDEF0123456789', 16);
    await m(cloud.id, wamid('5511999990000', 'ABCDEF012345678'), 17);
    const e2 = await m(web.id, 'HBgMNTUxMTk5OTk5MDAwMBUCABIYFA', 18);
    const e1 = await m(cloud.id, 'wamid.HBgMNTUxMTk5OTk5MDAwMBUCABIYFA', 19);
    const flags = await db
      .selectFrom('messages')
      .select(['id', 'duplicate'])
      .where('business_id', '=', b)
      .where('channel_id', '=', web.id)
      .execute();
    expect(Object.fromEntries(flags.map((f) => [f.id, f.duplicate]))).toEqual({
      [a2.id]: true,
      [b2.id]: true,
      [c2.id]: true,
      [d2.id]: false,
      [e2.id]: false,
    });
    expect(await ids(tenant, 'messages', '&channel=whatsapp_web')).toEqual([d2.id, e2.id].sort());
    void [a1, b1, e1];
  });

  it('stores a Cloud API message whatever its wamid, inserted or set by a send: one that holds no readable key has none', async () => {
    const tenant = await createTenant(t.app, 'Rule5unreadable');
    const db = t.database.db;
    const b = tenant.businessId;
    const { cloud } = await channels(b);
    const viaCloud = await contactWithConversation(db, b, 'whatsapp', {}, { channel_id: cloud.id });
    // Each reads as a binary whose length passes the int range (a varint's fifth byte), the first of
    // each pair sending the reader to a negative offset, the second taking a negative length, the
    // third passing the range in its sum.
    const inserted = [
      'wamid.01a1a5a5-3a40-7291-b484-90677ad21886',
      'wamid.OID/gP8PExgPHAEP',
      'wamid.GP////8HARUU//84ARQU',
    ];
    const sent = ['wamid.01a21a3e-3048-7731-a59a-9e646b41749c', 'wamid.OIPw4YkIhJlVMvjm', 'wamid.GP////8HAAAA'];
    const { sql } = await import('kysely');
    const keys = await sql<{ key: string | null }>`select whatsapp_message_key(id) as key
      from unnest(${[...inserted, ...sent]}::text[]) as u(id)`.execute(db);
    expect(keys.rows).toEqual([...inserted, ...sent].map(() => ({ key: null })));
    for (const [i, pid] of inserted.entries()) {
      await insertMessage(db, b, viaCloud.conversation, {
        channel_id: cloud.id,
        provider_message_id: pid,
        created_at: aug(2 * i),
      });
      const send = await insertMessage(db, b, viaCloud.conversation, {
        channel_id: cloud.id,
        provider_message_id: null,
        created_at: aug(2 * i + 1),
      });
      // Set as a send's answer sets it: the trigger of web copies reads it then.
      await db
        .updateTable('messages')
        .set({ provider_message_id: sent[i] })
        .where('business_id', '=', b)
        .where('id', '=', send.id)
        .execute();
    }
    const stored = await db
      .selectFrom('messages')
      .select('provider_message_id')
      .where('business_id', '=', b)
      .where('channel_id', '=', cloud.id)
      .execute();
    expect(stored.map((m) => m.provider_message_id).sort()).toEqual([...inserted, ...sent].sort());
  });

  it('leaves web messages of another number alone', async () => {
    const tenant = await createTenant(t.app, 'Rule5b');
    const db = t.database.db;
    const b = tenant.businessId;
    const { cloud } = await channels(b);
    const { web: otherWeb } = await channels(b);
    const viaCloud = await contactWithConversation(db, b, 'whatsapp', {}, { channel_id: cloud.id });
    const viaWeb = await contactWithConversation(db, b, 'whatsapp_web', {}, { channel_id: otherWeb.id });
    const x = await insertMessage(db, b, viaCloud.conversation, {
      channel_id: cloud.id,
      provider_message_id: 'wamid.X',
      created_at: aug(1),
    });
    const y = await insertMessage(db, b, viaWeb.conversation, {
      channel_id: otherWeb.id,
      provider_message_id: 'wamid.X',
      created_at: aug(2),
    });
    expect(await ids(tenant, 'messages')).toEqual([x.id, y.id].sort());
  });
});

describe(`query plans (${engine})`, () => {
  it('walks GET /messages and GET /events as index range scans on a big table', async () => {
    const tenant = await createTenant(t.app, 'Plans');
    const db = t.database.db;
    const b = tenant.businessId;
    const { conversation, contact } = await contactWithConversation(db, b);
    const { sql } = await import('kysely');
    await sql`insert into messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, status, created_at)
      select ${b}::uuid, gen_random_uuid(), ${conversation.id}::uuid, ${contact.id}::uuid, 'whatsapp', 'inbound', 'contact', 'RECEIVED',
             '2026-08-01'::timestamptz + (g * interval '1 second') from generate_series(1, 20000) g`.execute(db);
    await sql`insert into events (business_id, id, contact_id, conversation_id, channel, type, actor_type, created_at)
      select ${b}::uuid, gen_random_uuid(), ${contact.id}::uuid, ${conversation.id}::uuid, 'whatsapp', 'conversation_archived', 'system',
             '2026-08-01'::timestamptz + (g * interval '1 second') from generate_series(1, 20000) g`.execute(db);
    await sql`insert into media (business_id, message_id, filename, content_type)
      select business_id, id, 'f.jpg', 'image/jpeg' from messages where business_id = ${b}::uuid limit 5000`.execute(
      db,
    );
    await sql`analyze media`.execute(db);
    await sql`analyze messages`.execute(db);
    await sql`analyze events`.execute(db);
    const { exportsRepository } = await import('../../../src/modules/exports/exports.repository.ts');
    const { statementName } = await import('../../../src/db/prepared-statements.ts');
    const range = {
      since: '2026-08-01T00:00:00.000000Z',
      until: '2026-08-31T00:00:00.000000Z',
      after: { createdAt: '2026-08-05T00:00:00.000000Z', id: newId() },
      limit: 501,
    };
    const afterPosition = /Index Cond: .*created_at.*id/;
    for (const [q, index, cond] of [
      [exportsRepository.messageRecordsQuery(db, b, range), 'messages_export', afterPosition],
      [
        exportsRepository.messageRecordsQuery(db, b, { ...range, after: undefined }),
        'messages_export',
        /Index Cond: .*created_at >=/,
      ],
      [
        exportsRepository.messageRecordsQuery(db, b, { ...range, channels: ['whatsapp', 'email'] }),
        'messages_export',
        afterPosition,
      ],
      [
        exportsRepository.eventRecordsQuery(db, b, { ...range, types: ['conversation_archived'] }),
        'events_export',
        afterPosition,
      ],
      [exportsRepository.eventRecordsQuery(db, b, range), 'events_export', afterPosition],
    ] as const) {
      const compiled = q.compile();
      // Short enough, with a fixed number of parameters, to be prepared once per connection.
      expect(statementName(compiled.sql, compiled.parameters.length)).not.toBeNull();
      const { rows } = await db.executeQuery({ ...compiled, sql: `explain ${compiled.sql}` });
      const text = (rows as unknown as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toContain(`Index Scan using ${index}`);
      expect(text).toMatch(cond);
      expect(text).not.toMatch(/Sort|Seq Scan on (messages|events|media)|media_pkey/);
    }
  });
});
