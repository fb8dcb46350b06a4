import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { ADMIN_TOKEN, buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { postImport } from './import-helpers.ts';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app, 'Large');
});
afterAll(() => t.close());

const CONTACTS = 2000;
const MESSAGES_PER_CONVERSATION = 8;
const BAD_LINE = 12_345;

/** 20 000 records made on the fly, in chunks of many lines, with one malformed line among them. */
async function* records(): AsyncGenerator<string> {
  let line = 0;
  let chunk = '';
  const emit = (text: string) => {
    line++;
    chunk += (line === BAD_LINE ? '{"type":"message",' : text) + '\n';
  };
  for (let i = 0; i < CONTACTS; i++) {
    const contactId = v7();
    const conversationId = v7();
    emit(
      JSON.stringify({
        type: 'contact',
        id: contactId,
        first_name: `C${i}`,
        phone_number: `1415${2_000_000 + i}`,
        external_id: `x-${i}`,
        created_at: '2026-01-01T00:00:00.000001Z',
      }),
    );
    emit(
      JSON.stringify({
        type: 'conversation',
        id: conversationId,
        contact_id: contactId,
        channel: 'sms',
        created_at: '2026-01-01T00:00:00.000002Z',
      }),
    );
    for (let j = 0; j < MESSAGES_PER_CONVERSATION; j++) {
      emit(
        JSON.stringify({
          type: 'message',
          id: v7(),
          conversation_id: conversationId,
          direction: 'inbound',
          sender_type: 'contact',
          text: `m${j}`,
          status: 'RECEIVED',
          created_at: `2026-01-01T00:00:0${j + 1}.123456Z`,
        }),
      );
    }
    if (chunk.length > 64 * 1024) {
      yield chunk;
      chunk = '';
    }
  }
  yield chunk;
}

it('streams 20 000 records in one request', { timeout: 120_000 }, async () => {
  const res = await postImport(t.app, tenant.businessId, Readable.from(records()));
  expect(res.statusCode).toBe(200);
  const total = CONTACTS * (2 + MESSAGES_PER_CONVERSATION);
  expect(total).toBe(20_000);
  expect(res.json()).toEqual({
    imported: {
      contacts: CONTACTS,
      conversations: CONTACTS,
      messages: CONTACTS * MESSAGES_PER_CONVERSATION - 1,
      events: 0,
    },
    errors: [{ line: BAD_LINE, message: expect.stringMatching(/malformed JSON/) }],
    error_count: 1,
  });
  const counts = await sql<{ n: number; total: number; latest: string }>`
    SELECT count(*)::int AS n, sum(message_count)::int AS total, max(last_message_at) AS latest
    FROM conversations WHERE business_id = ${tenant.businessId}`.execute(t.database.db);
  expect(counts.rows[0]).toEqual({
    n: CONTACTS,
    total: CONTACTS * MESSAGES_PER_CONVERSATION - 1,
    latest: '2026-01-01T00:00:08.123456Z',
  });
});

it('takes a body far over the 1 MiB JSON limit over real HTTP, streamed in chunks', { timeout: 60_000 }, async () => {
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const lines = Array.from({ length: 3000 }, (_, i) =>
    JSON.stringify({
      type: 'contact',
      id: v7(),
      custom_fields: { note: 'x'.repeat(1000) },
      external_id: `http-${i}`,
      created_at: '2026-01-01T00:00:00Z',
    }),
  );
  const encoder = new TextEncoder();
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next >= lines.length) return controller.close();
      controller.enqueue(encoder.encode(lines.slice(next, next + 100).join('\n') + '\n'));
      next += 100;
    },
  });
  const res = await fetch(`${address}/admin/v1/businesses/${tenant.businessId}/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/x-ndjson' },
    body,
    duplex: 'half',
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({
    imported: { contacts: 3000, conversations: 0, messages: 0, events: 0 },
    errors: [],
    error_count: 0,
  });
});
