import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v7 } from 'uuid';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { identityDrift } from '../../helpers/contact-identities.ts';
import { ndjson, postImport, sampleRecords } from './import-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app, 'Importer');
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());
// Whatever a test wrote, every address names its oldest holder (the contacts' writer keeps contact_identities).
afterEach(async () => {
  expect(await identityDrift(t.database.db)).toEqual([]);
});

const db = () => t.database.db;

describe('POST /admin/v1/businesses/:bid/import', () => {
  it('imports every kind of record, keeping ids and microsecond timestamps exactly', async () => {
    const s = sampleRecords('keep');
    const res = await postImport(t.app, tenant.businessId, s.records);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      imported: { contacts: 1, conversations: 1, messages: 2, events: 1 },
      errors: [],
      error_count: 0,
    });

    const contact = await db()
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', s.contactId)
      .executeTakeFirstOrThrow();
    expect(contact).toMatchObject({
      business_id: tenant.businessId,
      first_name: 'Ana',
      last_name: 'García',
      email: 'anakeep@example.com',
      phone_number: '5491123456789',
      phone_key: '541123456789',
      external_id: 'crm-keep',
      tags: ['vip'],
      custom_fields: { plan: 'pro' },
      is_test: false,
      created_at: '2026-08-04T10:11:12.123456Z',
    });
    const conversation = await db()
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', s.conversationId)
      .executeTakeFirstOrThrow();
    expect(conversation).toMatchObject({
      business_id: tenant.businessId,
      contact_id: s.contactId,
      channel: 'whatsapp',
      created_at: '2026-08-04T10:12:00.000001Z',
      closed_at: null,
      message_count: 2,
      last_message_at: '2026-08-04T10:13:00.999999Z',
    });
    const messages = await db()
      .selectFrom('messages')
      .selectAll()
      .where('conversation_id', '=', s.conversationId)
      .orderBy('created_at')
      .execute();
    expect(messages.map((m) => m.id)).toEqual(s.messageIds);
    expect(messages[0]).toMatchObject({
      contact_id: s.contactId,
      channel: 'whatsapp',
      direction: 'inbound',
      sender_type: 'contact',
      type: 'text',
      text: 'Hola',
      status: 'RECEIVED',
      error: null,
      metadata: {},
      created_at: '2026-08-04T10:12:00.654321Z',
    });
    expect(messages[1]).toMatchObject({
      direction: 'outbound',
      sender_type: 'ai_agent',
      text: '¡Hola Ana!',
      status: 'ERROR',
      error: 'window closed',
      metadata: { campaign: 'x' },
      created_at: '2026-08-04T10:13:00.999999Z',
    });
    const event = await db().selectFrom('events').selectAll().where('id', '=', s.eventId).executeTakeFirstOrThrow();
    expect(event).toMatchObject({
      type: 'conversation_archived',
      contact_id: s.contactId,
      conversation_id: s.conversationId,
      channel: 'whatsapp',
      actor_type: 'api',
      data: { origin: 'import' },
      created_at: '2026-08-04T10:14:00.000500Z',
    });
  });

  it('reads records written with "type" given twice, the record kind first', async () => {
    const contactId = v7();
    const conversationId = v7();
    const messageId = v7();
    const eventId = v7();
    // Written by hand: JSON.stringify cannot repeat a key.
    const body = [
      `{"type":"contact","id":"${contactId}","first_name":"Eva","phone_number":"5215512345678","created_at":"2026-08-05T00:00:00.000001Z"}`,
      `{"type":"conversation","id":"${conversationId}","contact_id":"${contactId}","channel":"whatsapp","created_at":"2026-08-05T00:00:01Z"}`,
      `{"type":"message","id":"${messageId}","conversation_id":"${conversationId}","direction":"inbound","sender_type":"contact","type":"image","text":"","status":"RECEIVED","created_at":"2026-08-05T00:00:02.5Z"}`,
      `{"type":"event","id":"${eventId}","conversation_id":"${conversationId}","contact_id":"${contactId}","type":"conversation_resolved","actor_type":"human","data":{"reason":"done"},"created_at":"2026-08-05T00:00:03Z"}`,
    ].join('\n');
    const res = await postImport(t.app, tenant.businessId, body);
    expect(res.json()).toEqual({
      imported: { contacts: 1, conversations: 1, messages: 1, events: 1 },
      errors: [],
      error_count: 0,
    });
    const message = await db()
      .selectFrom('messages')
      .select(['type', 'created_at'])
      .where('id', '=', messageId)
      .executeTakeFirstOrThrow();
    expect(message).toEqual({ type: 'image', created_at: '2026-08-05T00:00:02.500000Z' });
    const event = await db()
      .selectFrom('events')
      .select(['type', 'actor_type'])
      .where('id', '=', eventId)
      .executeTakeFirstOrThrow();
    expect(event).toEqual({ type: 'conversation_resolved', actor_type: 'human' });
  });

  it('skips records whose id exists: a second import stores nothing and reports no error', async () => {
    const s = sampleRecords('twice');
    const first = await postImport(t.app, tenant.businessId, s.records);
    expect(first.json().imported).toEqual({ contacts: 1, conversations: 1, messages: 2, events: 1 });
    const second = await postImport(t.app, tenant.businessId, s.records);
    expect(second.json()).toEqual({
      imported: { contacts: 0, conversations: 0, messages: 0, events: 0 },
      errors: [],
      error_count: 0,
    });
    const conversation = await db()
      .selectFrom('conversations')
      .select('message_count')
      .where('id', '=', s.conversationId)
      .executeTakeFirstOrThrow();
    expect(conversation.message_count).toBe(2);
  });

  it('accepts a charset parameter, uppercase ids, CRLF line ends, blank lines, optional fields and a last line without newline', async () => {
    const contactId = v7();
    const body =
      `\r\n${JSON.stringify({ type: 'contact', id: contactId.toUpperCase(), created_at: '2026-01-01T00:00:00Z' })}\r\n\n` +
      JSON.stringify({
        type: 'event',
        id: v7(),
        contact_id: contactId.toUpperCase(),
        event_type: 'contact_field_changed',
        actor_type: 'system',
        created_at: '2026-01-01T00:00:01+02:00',
      });
    const res = await postImport(t.app, tenant.businessId, body, {
      'content-type': 'application/x-ndjson; charset=utf-8',
    });
    expect(res.json()).toEqual({
      imported: { contacts: 1, conversations: 0, messages: 0, events: 1 },
      errors: [],
      error_count: 0,
    });
    const contact = await db().selectFrom('contacts').selectAll().where('id', '=', contactId).executeTakeFirstOrThrow();
    expect(contact).toMatchObject({
      first_name: '',
      last_name: '',
      email: null,
      phone_number: null,
      tags: [],
      custom_fields: {},
      created_at: '2026-01-01T00:00:00.000000Z',
    });
    const event = await db()
      .selectFrom('events')
      .selectAll()
      .where('contact_id', '=', contactId)
      .executeTakeFirstOrThrow();
    expect(event).toMatchObject({
      channel: null,
      conversation_id: null,
      data: {},
      created_at: '2025-12-31T22:00:01.000000Z',
    });
  });

  it('reports bad lines with their line numbers and goes on', async () => {
    const s = sampleRecords('bad');
    const existing = sampleRecords('taken');
    await postImport(t.app, tenant.businessId, existing.records.slice(0, 1));
    const lines = [
      JSON.stringify(s.records[0]), // 1 good
      '{"type": "contact", ', // 2 malformed
      JSON.stringify({ type: 'campaign', id: v7() }), // 3 unknown type
      '[1, 2]', // 4 not an object
      JSON.stringify({ ...s.records[0], id: v7(), external_id: 'other', email: 'x@example.com', extra: true }), // 5 unknown field
      JSON.stringify({ ...s.records[0], id: v7(), external_id: 'ph', phone_number: '12' }), // 6 bad phone
      JSON.stringify({ ...s.records[0], id: v7(), external_id: 'ts', created_at: '2026-02-30T00:00:00Z' }), // 7 bad timestamp
      JSON.stringify({ ...s.records[0], id: v7(), external_id: 'crm-taken' }), // 8 external_id of a stored contact
      JSON.stringify({ ...s.records[0], id: v7(), external_id: 'crm-bad' }), // 9 external_id of line 1
      JSON.stringify(s.records[1]), // 10 good conversation
      JSON.stringify({ ...s.records[2], conversation_id: v7() }), // 11 unknown conversation
      JSON.stringify({ ...s.records[3], status: 'LOST' }), // 12 bad status
      JSON.stringify(s.records[3]), // 13 good message
      JSON.stringify({ ...s.records[1], id: v7(), contact_id: v7() }), // 14 unknown contact
      JSON.stringify({ ...s.records[4], id: v7(), contact_id: v7() }), // 15 event of an unknown contact
      JSON.stringify({ ...s.records[4], id: v7(), conversation_id: v7() }), // 16 event of an unknown conversation
      JSON.stringify({ ...s.records[4], event_type: 'nope' }), // 17 unknown event type
      JSON.stringify(s.records[4]), // 18 good event
    ];
    const res = await postImport(t.app, tenant.businessId, lines.join('\n'));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.imported).toEqual({ contacts: 1, conversations: 1, messages: 1, events: 1 });
    expect(body.errors.map((e: { line: number }) => e.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 15, 16, 17]);
    expect(body.error_count).toBe(14);
    const message = (line: number) => body.errors.find((e: { line: number }) => e.line === line).message as string;
    expect(message(2)).toMatch(/malformed JSON/);
    expect(message(3)).toMatch(/unknown record type "campaign"/);
    expect(message(4)).toMatch(/JSON object/);
    expect(message(5)).toBe('unknown field "extra"');
    expect(message(6)).toMatch(/phone_number "12"/);
    expect(message(7)).toMatch(/created_at/);
    expect(message(8)).toMatch(/external_id "crm-taken" already belongs/);
    expect(message(9)).toMatch(/external_id "crm-bad" already belongs/);
    expect(message(11)).toMatch(/conversation .* not found/);
    expect(message(12)).toMatch(/status/);
    expect(message(14)).toMatch(/contact .* not found/);
    expect(message(15)).toMatch(/^contact .* not found/);
    expect(message(16)).toMatch(/^conversation .* not found/);
    expect(message(17)).toMatch(/event_type/);
  });

  it('keeps contacts as they come: two with one email or phone are both stored, and found together', async () => {
    const base = sampleRecords('dup').records[0] as Record<string, unknown>;
    const lines = [
      { ...base, id: v7(), external_id: 'dup-1', email: 'twice@example.com', phone_number: '5491166660000' },
      { ...base, id: v7(), external_id: 'dup-2', email: 'TWICE@example.com', phone_number: '541166660000' },
    ];
    const res = await postImport(t.app, tenant.businessId, lines.map((l) => JSON.stringify(l)).join('\n'));
    expect(res.json()).toMatchObject({ imported: { contacts: 2 }, errors: [] });
    for (const query of ['email=twice@example.com', 'phone=5491166660000']) {
      const found = await t.app.inject({ url: `/external/v2/contacts?${query}`, headers: tenant.headers });
      expect(found.json().results.map((c: { id: string }) => c.id)).toEqual(lines.map((l) => l.id));
    }
  });

  it("takes a conversation's channel_id only of a channel of the business and of the conversation's type", async () => {
    const channel = async (bid: string, identifier: string) =>
      (
        await t.app.inject({
          method: 'POST',
          url: `/admin/v1/businesses/${bid}/channels`,
          headers: adminHeaders,
          payload: {
            type: 'whatsapp_web',
            identifier,
            provider: { kind: 'whatsapp_web', phone_number: identifier.replace('+', '') },
          },
        })
      ).json().channel.id as string;
    const mine = await channel(tenant.businessId, '+15550001001');
    const theirs = await channel(other.businessId, '+15550001002');
    const s = sampleRecords('channels');
    const conversation = (channel_id: string, channel = 'whatsapp_web') => ({
      ...s.records[1],
      id: v7(),
      channel,
      channel_id,
    });
    const res = await postImport(t.app, tenant.businessId, [
      s.records[0],
      conversation(mine), // 2 good
      conversation(theirs), // 3 another business's
      conversation(v7()), // 4 none
      conversation(mine, 'whatsapp'), // 5 another type
    ]);
    expect(res.json().imported).toMatchObject({ contacts: 1, conversations: 1 });
    expect(res.json().errors).toEqual([
      { line: 3, message: `channel ${theirs} not found among the whatsapp_web channels of this business` },
      { line: 4, message: expect.stringMatching(/^channel .* not found among the whatsapp_web channels/) },
      { line: 5, message: `channel ${mine} not found among the whatsapp channels of this business` },
    ]);
  });

  it('reports a line nested too deep or holding text PostgreSQL cannot store, and goes on', async () => {
    const s = sampleRecords('deep');
    const contact = (extra: string) =>
      `{"type":"contact","id":"${v7()}","first_name":"X","custom_fields":${extra},"created_at":"2026-08-04T10:00:00Z"}`;
    const res = await postImport(
      t.app,
      tenant.businessId,
      [
        JSON.stringify(s.records[0]),
        contact(`{"a":${'['.repeat(5000)}1${']'.repeat(5000)}}`), // 2
        contact('{"a":"x\\ud800"}'), // 3
        contact('{"a":"x\\u0000"}'), // 4
        JSON.stringify(s.records[1]),
      ].join('\n'),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json().imported).toMatchObject({ contacts: 1, conversations: 1 });
    expect(
      res
        .json()
        .errors.map((e: { line: number; message: string }) => [
          e.line,
          e.message.replace(/^\/custom_fields\/a(\/0)*/, ''),
        ]),
    ).toEqual([
      [2, ' nested deeper than 64 levels'],
      [3, ' is not well-formed Unicode (a lone surrogate)'],
      [4, ' contains the NUL character (\\u0000)'],
    ]);
  });

  it("ties an event to its conversation's contact, and to a conversation or none by its type", async () => {
    const a = sampleRecords('tie-a');
    const b = sampleRecords('tie-b');
    const fieldChange = { event_type: 'contact_field_changed', data: { source: 'import', changes: [] } };
    const res = await postImport(t.app, tenant.businessId, [
      ...a.records.slice(0, 2),
      ...b.records.slice(0, 2),
      { ...a.records[4], id: v7(), conversation_id: b.conversationId }, // 5 another contact's conversation
      { ...a.records[4], id: v7(), conversation_id: null }, // 6 a conversation's event without one
      { ...a.records[4], id: v7(), ...fieldChange }, // 7 a contact's event with a conversation
      { ...a.records[4], id: v7(), ...fieldChange, conversation_id: null }, // 8 good
      a.records[4], // 9 good
    ]);
    expect(res.json().imported).toMatchObject({ contacts: 2, conversations: 2, events: 2 });
    expect(res.json().errors).toEqual([
      {
        line: 5,
        message: `conversation ${b.conversationId} not found among the conversations of contact ${a.contactId}`,
      },
      { line: 6, message: 'a conversation_archived event needs its conversation_id' },
      { line: 7, message: 'a contact_field_changed event has no conversation: conversation_id must be null' },
    ]);
    const stored = await db()
      .selectFrom('events')
      .select(['type', 'conversation_id', 'channel'])
      .where('contact_id', '=', a.contactId)
      .orderBy('type')
      .execute();
    expect(stored).toEqual([
      { type: 'contact_field_changed', conversation_id: null, channel: null },
      { type: 'conversation_archived', conversation_id: a.conversationId, channel: 'whatsapp' },
    ]);
  });

  it('refuses references to another business and keeps businesses apart', async () => {
    const theirs = sampleRecords('theirs');
    expect((await postImport(t.app, other.businessId, theirs.records)).json().error_count).toBe(0);
    const mine = sampleRecords('mine');
    const res = await postImport(t.app, tenant.businessId, [
      mine.records[0],
      { ...mine.records[1], contact_id: theirs.contactId },
      { ...mine.records[2], conversation_id: theirs.conversationId },
      { ...mine.records[4], contact_id: theirs.contactId, conversation_id: null },
      { ...mine.records[4], id: v7(), contact_id: mine.contactId, conversation_id: theirs.conversationId },
    ]);
    expect(res.json().imported).toEqual({ contacts: 1, conversations: 0, messages: 0, events: 0 });
    expect(res.json().errors.map((e: { line: number }) => e.line)).toEqual([2, 3, 4, 5]);
    const theirConversation = await db()
      .selectFrom('conversations')
      .select('message_count')
      .where('id', '=', theirs.conversationId)
      .executeTakeFirstOrThrow();
    expect(theirConversation.message_count).toBe(2);

    // The same ids in another business are other records: both exist side by side.
    const again = await postImport(t.app, tenant.businessId, [
      { ...theirs.records[0], external_id: 'copy', email: 'copy@example.com' },
    ]);
    expect(again.json().imported.contacts).toBe(1);
    const copies = await db().selectFrom('contacts').select('business_id').where('id', '=', theirs.contactId).execute();
    expect(copies).toHaveLength(2);
  });

  it('adds to the message counters and keeps the latest last_message_at across imports', async () => {
    const s = sampleRecords('count');
    await postImport(t.app, tenant.businessId, s.records.slice(0, 2));
    const older = { ...s.records[2], id: v7(), created_at: '2026-08-04T09:00:00.000001Z' };
    const res = await postImport(t.app, tenant.businessId, [s.records[3], s.records[2], older]);
    expect(res.json().imported.messages).toBe(3);
    const more = await postImport(t.app, tenant.businessId, [
      { ...s.records[2], id: v7(), created_at: '2026-08-03T00:00:00Z' },
    ]);
    expect(more.json().imported.messages).toBe(1);
    const conversation = await db()
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', s.conversationId)
      .executeTakeFirstOrThrow();
    expect(conversation.message_count).toBe(4);
    expect(conversation.last_message_at).toBe('2026-08-04T10:13:00.999999Z');
  });

  it('reports a line over 1 MiB and reads on', async () => {
    const s = sampleRecords('long');
    const long = JSON.stringify({ ...s.records[0], first_name: 'x'.repeat(1024 * 1024 + 10) });
    const res = await postImport(t.app, tenant.businessId, `${long}\n${JSON.stringify(s.records[0])}\n${long}`);
    expect(res.json().imported.contacts).toBe(1);
    expect(res.json().errors).toEqual([
      { line: 1, message: expect.stringMatching(/longer than 1048576 bytes/) },
      { line: 3, message: expect.stringMatching(/longer than/) },
    ]);
  });

  it('keeps the first 1000 errors and counts them all', async () => {
    const res = await postImport(t.app, tenant.businessId, 'nope\n'.repeat(1500));
    expect(res.json().errors).toHaveLength(1000);
    expect(res.json().errors[999].line).toBe(1000);
    expect(res.json().error_count).toBe(1500);
  });

  it('answers 401 without the operator token, 404 for an unknown business, 400 for a bad id', async () => {
    const s = sampleRecords('auth');
    const unauth = await postImport(t.app, tenant.businessId, s.records, {
      authorization: 'Bearer wrong-token-wrong-token',
    });
    expect(unauth.statusCode).toBe(401);
    expect(unauth.json().error.code).toBe('unauthorized');
    const missing = await postImport(t.app, v7(), s.records);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('not_found');
    const bad = await postImport(t.app, 'not-a-uuid', s.records);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('validation_error');
    expect(await db().selectFrom('contacts').select('id').where('id', '=', s.contactId).execute()).toHaveLength(0);
  });

  it('answers 415 for another content type or no body', async () => {
    const url = `/admin/v1/businesses/${tenant.businessId}/import`;
    for (const request of [
      {
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        payload: JSON.stringify([sampleRecords().records[0]]),
      },
      { headers: { ...adminHeaders, 'content-type': 'text/plain' }, payload: ndjson(sampleRecords().records) },
      { headers: adminHeaders },
    ]) {
      const res = await t.app.inject({ method: 'POST', url, ...request });
      expect(res.statusCode, JSON.stringify(request.headers)).toBe(415);
      expect(res.json().error.code).toBe('unsupported_media_type');
    }
  });

  it('is listed in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const operation = doc.paths['/admin/v1/businesses/{bid}/import'].post;
    expect(Object.keys(operation.requestBody.content)).toEqual(['application/x-ndjson']);
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '401', '404', '415']));
  });
});
