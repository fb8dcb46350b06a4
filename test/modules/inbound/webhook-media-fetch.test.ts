import { afterAll, beforeAll, expect, it } from 'vitest';
import { inboundMessage, startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { withWhatsAppChannel, type WhatsAppFixture } from './whatsapp-helpers.ts';

let t: TestApp;
let graph: FakeGraphApi;
let notify: WhatsAppFixture['notify'];

beforeAll(async () => {
  graph = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target; the channel calls it with its token.
  ({ t, notify } = await withWhatsAppChannel({
    env: { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' },
    channel: { apiBaseUrl: graph.baseUrl, accessToken: graph.accessToken },
  }));
});
afterAll(async () => {
  await t?.close();
  await graph.close();
});

it('answers before the download, and the queued media_fetch job then fetches the file from the Graph API', async () => {
  const bytes = Buffer.from('%PDF-1.4 fake invoice');
  const media = graph.addMedia({ bytes, mimeType: 'application/pdf' });
  const m = inboundMessage('5491122334455', 'document', {
    id: media.id,
    mime_type: 'application/pdf',
    sha256: media.sha256,
    filename: 'invoice.pdf',
  });

  const res = await notify({ messages: [m] });
  expect(res.statusCode).toBe(200);

  const db = t.database.db;
  const message = await db
    .selectFrom('messages')
    .select('id')
    .where('provider_message_id', '=', m.id as string)
    .executeTakeFirstOrThrow();
  let row = await db.selectFrom('media').selectAll().where('message_id', '=', message.id).executeTakeFirstOrThrow();
  for (let i = 0; i < 100 && row.storage_key === null; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    row = await db.selectFrom('media').selectAll().where('message_id', '=', message.id).executeTakeFirstOrThrow();
  }
  expect(row).toMatchObject({
    provider_media_id: media.id,
    filename: 'invoice.pdf',
    size_bytes: bytes.length,
    sha256: media.sha256,
  });
  expect(row.storage_key).not.toBeNull();
  expect(graph.requests.map((r) => [r.method, r.path])).toEqual([
    ['GET', `/v21.0/${media.id}`],
    ['GET', '/whatsapp_business/attachments/'],
  ]);
  // The file is recorded in the commit that ends the job.
  const job = await db.selectFrom('outbox').selectAll().where('ref_id', '=', message.id).executeTakeFirstOrThrow();
  expect(job).toMatchObject({ kind: 'media_fetch', state: 'done' });
});
