import { afterAll, beforeAll, expect, it } from 'vitest';
import { inboundMessage, startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { notificationFor, postSigned } from './whatsapp-helpers.ts';

let t: TestApp;
let graph: FakeGraphApi;
let tenant: Tenant;

beforeAll(async () => {
  graph = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app);
});
afterAll(async () => {
  await t.close();
  await graph.close();
});

it('answers before the download, and the queued media_fetch job then fetches the file from the Graph API', async () => {
  const provider = {
    kind: 'whatsapp_cloud',
    phone_number_id: '106540352242922',
    access_token: graph.accessToken,
    app_secret: 'media-secret',
    verify_token: 'v',
    api_base_url: graph.baseUrl,
  };
  const created = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: { type: 'whatsapp', identifier: '15550783881', provider },
  });
  expect(created.statusCode).toBe(201);
  const channel = {
    id: created.json().channel.id,
    businessId: tenant.businessId,
    identifier: '15550783881',
    phoneNumberId: provider.phone_number_id,
    appSecret: 'media-secret',
    verifyToken: 'v',
  };
  const bytes = Buffer.from('%PDF-1.4 fake invoice');
  const media = graph.addMedia({ bytes, mimeType: 'application/pdf' });
  const m = inboundMessage('5491122334455', 'document', {
    id: media.id,
    mime_type: 'application/pdf',
    sha256: media.sha256,
    filename: 'invoice.pdf',
  });

  const res = await postSigned(t.app, notificationFor(channel, { messages: [m] }), channel.appSecret);
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
