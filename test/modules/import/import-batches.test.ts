import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ImportService } from '../../../src/modules/import/import.service.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { identityDrift } from '../../helpers/contact-identities.ts';
import { ndjson, postImport, sampleRecords } from './import-helpers.ts';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app, 'Batches');
});
afterAll(() => t.close());
// Whatever a test wrote, every address names its oldest holder (the contacts' writer keeps contact_identities).
afterEach(async () => {
  expect(await identityDrift(t.database.db)).toEqual([]);
});

const db = () => t.database.db;

describe('import batches', () => {
  it('decides the export flag of imported messages as the trigger does for other writers', async () => {
    const normal = sampleRecords('flag-normal');
    const test = sampleRecords('flag-test');
    const testContact = { ...test.records[0], is_test: true };
    const res = await postImport(t.app, tenant.businessId, [
      ...normal.records.slice(0, 4),
      testContact,
      ...test.records.slice(1, 4),
    ]);
    expect(res.json()).toMatchObject({ imported: { messages: 4 }, error_count: 0 });
    const flags = await db()
      .selectFrom('messages')
      .select(['conversation_id', 'excluded', 'duplicate'])
      .where('conversation_id', 'in', [normal.conversationId, test.conversationId])
      .execute();
    expect(flags).toHaveLength(4);
    for (const f of flags)
      expect(f).toEqual({
        conversation_id: f.conversation_id,
        excluded: f.conversation_id === test.conversationId,
        duplicate: false,
      });

    // A writer that does not give the flag still gets it from the trigger (migration 0006).
    const written = await sql<{ excluded: boolean }>`
      INSERT INTO messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, type, text, status, created_at)
      VALUES (${tenant.businessId}, ${v7()}, ${test.conversationId}, ${test.contactId}, 'whatsapp', 'inbound', 'contact', 'text', 'x', 'RECEIVED', now())
      RETURNING excluded`.execute(db());
    expect(written.rows[0].excluded).toBe(true);
    // Rule 4 still follows later changes of the contact.
    await db().updateTable('contacts').set({ is_test: false }).where('id', '=', test.contactId).execute();
    const after = await db()
      .selectFrom('messages')
      .select('excluded')
      .where('conversation_id', '=', test.conversationId)
      .execute();
    expect(after.map((m) => m.excluded)).toEqual([false, false, false]);
  });

  it(
    'stores a batch in groups on several connections with the same result as one statement',
    { timeout: 60_000 },
    async () => {
      const service = new ImportService(db(), { parallel: 3 });
      const conversations = Array.from({ length: 40 }, () => ({ contact: v7(), conversation: v7() }));
      const lines: object[] = [];
      for (const [i, c] of conversations.entries()) {
        lines.push({ type: 'contact', id: c.contact, external_id: `group-${i}`, created_at: '2026-03-01T00:00:00Z' });
        lines.push({
          type: 'conversation',
          id: c.conversation,
          contact_id: c.contact,
          channel: 'sms',
          created_at: '2026-03-01T00:00:00Z',
        });
      }
      // Messages interleaved across conversations, so every group and every batch touches many of them.
      const message = (conversationId: string, n: number) => ({
        type: 'message',
        id: v7(),
        conversation_id: conversationId,
        direction: 'inbound',
        sender_type: 'contact',
        text: `m${n}`,
        status: 'RECEIVED',
        created_at: new Date(Date.UTC(2026, 2, 1) + n * 1000).toISOString(),
      });
      const messages = Array.from({ length: 12_000 }, (_, n) =>
        message(conversations[n % conversations.length].conversation, n),
      );
      lines.push(...messages.slice(0, 6000));
      const missingLine = lines.length + 1;
      lines.push(message(v7(), 1)); // a conversation that does not exist, inside a batch of good rows
      lines.push(...messages.slice(6000));
      const first = await service.importNdjson(tenant.businessId, [ndjson(lines)]);
      expect(first.imported).toEqual({ contacts: 40, conversations: 40, messages: 12_000, events: 0 });
      expect(first.errors).toEqual([
        { line: missingLine, message: expect.stringMatching(/^conversation .* not found/) },
      ]);

      // Again, with half of the messages new: the existing ones are skipped, not counted, not errors.
      const more = Array.from({ length: 6000 }, (_, n) =>
        message(conversations[n % conversations.length].conversation, 12_000 + n),
      );
      const second = await service.importNdjson(tenant.businessId, [ndjson([...messages.slice(0, 6000), ...more])]);
      expect(second).toEqual({
        imported: { contacts: 0, conversations: 0, messages: 6000, events: 0 },
        errors: [],
        error_count: 0,
      });

      const counters = await sql<{ n: number; total: number; stored: number }>`
      SELECT count(*)::int AS n, sum(message_count)::int AS total,
        (SELECT count(*)::int FROM messages m WHERE m.business_id = ${tenant.businessId} AND m.conversation_id = ANY(${conversations.map((c) => c.conversation)}::uuid[])) AS stored
      FROM conversations WHERE business_id = ${tenant.businessId} AND id = ANY(${conversations.map((c) => c.conversation)}::uuid[])`.execute(
        db(),
      );
      expect(counters.rows[0]).toEqual({ n: 40, total: 18_000, stored: 18_000 });
      const latest = await db()
        .selectFrom('conversations')
        .select('last_message_at')
        .where('id', '=', conversations[0].conversation)
        .executeTakeFirstOrThrow();
      // Message 17 960 is the last one of conversation 0 (17 960 = 40 × 449), written 4 h 59 min 20 s in.
      expect(latest.last_message_at).toBe('2026-03-01T04:59:20.000000Z');
    },
  );

  it('finds parents on earlier lines of earlier batches and never on later lines', { timeout: 60_000 }, async () => {
    const service = new ImportService(db(), { parallel: 3 });
    const at = '2026-04-01T00:00:00Z';
    const pairs = Array.from({ length: 3000 }, () => ({ contact: v7(), conversation: v7() }));
    // Line 1: a conversation whose contact comes later, in the second batch of contacts (1 000 a batch).
    const lines: object[] = [
      { type: 'conversation', id: v7(), contact_id: pairs[1500].contact, channel: 'sms', created_at: at },
    ];
    for (const [i, p] of pairs.entries()) {
      lines.push({ type: 'contact', id: p.contact, external_id: `pipe-${i}`, created_at: at });
      lines.push({ type: 'conversation', id: p.conversation, contact_id: p.contact, channel: 'sms', created_at: at });
    }
    // Messages and an event refer to conversations and contacts of earlier batches.
    for (const [i, p] of pairs.entries()) {
      lines.push({
        type: 'message',
        id: v7(),
        conversation_id: p.conversation,
        direction: 'inbound',
        sender_type: 'contact',
        text: `m${i}`,
        status: 'RECEIVED',
        created_at: at,
      });
    }
    lines.push({
      type: 'event',
      id: v7(),
      conversation_id: pairs[0].conversation,
      contact_id: pairs[0].contact,
      event_type: 'conversation_archived',
      actor_type: 'api',
      data: {},
      created_at: at,
    });
    const result = await service.importNdjson(tenant.businessId, [ndjson(lines)]);
    expect(result.errors).toEqual([{ line: 1, message: `contact ${pairs[1500].contact} not found in this business` }]);
    expect(result.imported).toEqual({ contacts: 3000, conversations: 3000, messages: 3000, events: 1 });
    const counted = await sql<{ total: number }>`
      SELECT sum(message_count)::int AS total FROM conversations WHERE business_id = ${tenant.businessId} AND id = ANY(${pairs.map((p) => p.conversation)}::uuid[])`.execute(
      db(),
    );
    expect(counted.rows[0].total).toBe(3000);
  });
});
