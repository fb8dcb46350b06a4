import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage, startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { startS3Server, type TestS3Server } from '../../helpers/s3-server.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { PUBLIC_URL } from '../../helpers/test-app.ts';
import { withWhatsAppChannel, type WhatsAppFixture } from '../inbound/whatsapp-helpers.ts';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
const PREFIX = 'media-e2e';

let s3: TestS3Server;
let graph: FakeGraphApi;
let fixture: WhatsAppFixture;
let other: Tenant;

beforeAll(async () => {
  s3 = await startS3Server();
  graph = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target.
  fixture = await withWhatsAppChannel({
    env: { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true', ...s3.env(PREFIX) },
    channel: { apiBaseUrl: graph.baseUrl, accessToken: graph.accessToken },
  });
  other = await createTenant(fixture.t.app, 'Other');
});
let s3Closed = false;
afterAll(async () => {
  await fixture?.t.close();
  await graph?.close();
  if (!s3Closed) await s3?.close();
});

const app = () => fixture.t.app;
const download = (url: string) => app().inject({ method: 'GET', url: url.slice(PUBLIC_URL.length) });
const object = (key: string) => s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${PREFIX}/${key}` }));

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('media in an S3 bucket', () => {
  it('keeps a received image in the bucket and serves it at the signed address of GET /media/:id', async () => {
    const { t, tenant } = fixture;
    const served = graph.addMedia({ bytes: PNG, mimeType: 'image/png' });
    const m = inboundMessage('5491133445566', 'image', {
      id: served.id,
      mime_type: 'image/png',
      sha256: served.sha256,
    });
    const res = await fixture.notify({ contacts: [{ waId: '5491133445566', name: 'S3 Tester' }], messages: [m] });
    expect(res.statusCode, res.body).toBe(200);
    const db = t.database.db;
    const message = await db
      .selectFrom('messages')
      .select('id')
      .where('provider_message_id', '=', m.id as string)
      .executeTakeFirstOrThrow();
    const row = () => db.selectFrom('media').selectAll().where('message_id', '=', message.id).executeTakeFirstOrThrow();
    await until(async () => (await row()).storage_key !== null);
    const media = await row();
    expect(media).toMatchObject({ storage_key: `${tenant.businessId}/${media.id}`, size_bytes: PNG.length });

    // In the bucket under the prefix, with its type.
    const stored = await object(media.storage_key!);
    expect(stored.ContentType).toBe('image/png');
    expect(Buffer.from(await stored.Body!.transformToByteArray()).equals(PNG)).toBe(true);

    const link = await app().inject({ method: 'GET', url: `/external/v2/media/${media.id}`, headers: tenant.headers });
    expect(link.statusCode).toBe(200);
    const { url } = link.json().media as { url: string };
    expect(url.startsWith(`${PUBLIC_URL}/files/${media.id}?`)).toBe(true);
    const file = await download(url);
    expect(file.statusCode).toBe(200);
    expect(file.rawPayload.equals(PNG)).toBe(true);
    expect(file.headers['content-type']).toBe('image/png');
    expect(file.headers['content-length']).toBe(String(PNG.length));

    // Another business's key finds nothing.
    const foreign = await app().inject({
      method: 'GET',
      url: `/external/v2/media/${media.id}`,
      headers: other.headers,
    });
    expect(foreign.statusCode).toBe(404);

    // A file gone from the bucket answers 404 at its address, as a file gone from the disk does.
    await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: `${PREFIX}/${media.storage_key}` }));
    const gone = await download(url);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe('not_found');
  });

  it("serves a contact's picture from the bucket at its public address, and 404 for a name with none", async () => {
    const { tenant } = fixture;
    const avatar = await app().services.media.avatars.store(tenant.businessId, { bytes: PNG, mimeType: 'image/png' });
    expect(avatar.url).toMatch(
      new RegExp(`^${PUBLIC_URL}/files/avatars/${tenant.businessId}/[A-Za-z0-9_-]{22}\\.png$`),
    );
    expect((await object(avatar.key)).ContentType).toBe('image/png');
    const picture = await download(avatar.url);
    expect(picture.statusCode).toBe(200);
    expect(picture.rawPayload.equals(PNG)).toBe(true);
    expect(picture.headers['content-type']).toBe('image/png');

    const missing = await download(avatar.url.replace(/[A-Za-z0-9_-]{22}\.png$/, 'AAAAAAAAAAAAAAAAAAAAAA.png'));
    expect(missing.statusCode).toBe(404);
    await app().services.media.avatars.discard(avatar);
    expect((await download(avatar.url)).statusCode).toBe(404);
  });

  it('answers 500, never 404, for a stored file while the bucket cannot be reached', async () => {
    const { tenant } = fixture;
    const avatar = await app().services.media.avatars.store(tenant.businessId, { bytes: PNG, mimeType: 'image/png' });
    await s3.close();
    s3Closed = true;
    const res = await download(avatar.url);
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe('internal_error');
  });
});
