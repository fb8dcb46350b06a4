import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { enqueueJob } from '../../../src/jobs/outbox.worker.ts';
import { signedMediaUrl } from '../../../src/modules/media/media.signing.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let graph: FakeGraphApi;
let acme: Tenant;
let other: Tenant;
let channelId: string;

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

beforeAll(async () => {
  graph = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  acme = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  const channel = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${acme.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'whatsapp',
      identifier: '14155550100',
      provider: {
        kind: 'whatsapp_cloud',
        phone_number_id: '2001',
        access_token: graph.accessToken,
        app_secret: 's',
        verify_token: 'v',
        api_base_url: graph.baseUrl,
      },
    },
  });
  expect(channel.statusCode).toBe(201);
  channelId = channel.json().channel.id;
});
afterAll(async () => {
  await t.close();
  await graph.close();
});

/** An inbound message with one attachment, as the inbound module stores it, and its fetch job. */
async function inboundMedia(
  tenant: Tenant,
  media: { providerMediaId: string; contentType?: string; filename?: string; sha256?: string },
) {
  const db = t.database.db;
  const contact = await insertContact(db, tenant.businessId, { phone_number: '5491155550000' });
  const conversation = await insertConversation(db, tenant.businessId, contact.id, { channel_id: channelId });
  const message = await insertMessage(db, tenant.businessId, conversation, {
    type: 'image',
    channel_id: channelId,
    text: '',
  });
  const row = await db
    .insertInto('media')
    .values({
      business_id: tenant.businessId,
      message_id: message.id,
      provider_media_id: media.providerMediaId,
      content_type: media.contentType ?? null,
      filename: media.filename ?? null,
      sha256: media.sha256 ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await enqueueJob(db, { businessId: tenant.businessId, kind: 'media_fetch', refId: message.id });
  t.app.worker.wake('media_fetch');
  return { message, media: row };
}

const job = (messageId: string) =>
  t.database.db
    .selectFrom('outbox')
    .select(['state', 'attempts', 'last_error'])
    .where('kind', '=', 'media_fetch')
    .where('ref_id', '=', messageId)
    .executeTakeFirstOrThrow();
const mediaRow = (businessId: string, id: number) =>
  t.database.db
    .selectFrom('media')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
const getMedia = (tenant: Tenant, id: number | string) =>
  t.app.inject({ method: 'GET', url: `/external/v2/media/${id}`, headers: tenant.headers });
const download = (url: string) => t.app.inject({ method: 'GET', url: url.slice(PUBLIC_URL.length) });

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('media_fetch jobs', () => {
  it('are fetched again after a crash, until one keeps stopping its worker: then it ends', async () => {
    const handler = t.app.services.media.fetchJobHandler();
    const job = { business_id: acme.businessId, id: 'job', kind: 'media_fetch', ref_id: 'message', attempts: 1 };
    expect(await handler.onAbandoned({ ...job, attempts: 1 } as never, t.database.db)).toBe('retry');
    expect(await handler.onAbandoned({ ...job, attempts: 9 } as never, t.database.db)).toBe('retry');
    expect(await handler.onAbandoned({ ...job, attempts: 10 } as never, t.database.db)).toBe('give_up');
  });
});

describe('inbound media', () => {
  let fetched: { id: number; messageId: string };

  it('is fetched from the Graph API by the media_fetch job and stored', async () => {
    const served = graph.addMedia({ bytes: PNG, mimeType: 'image/png' });
    const { message, media } = await inboundMedia(acme, {
      providerMediaId: served.id,
      contentType: 'image/png',
      sha256: served.sha256,
    });
    await until(async () => (await job(message.id)).state === 'done');
    expect(await mediaRow(acme.businessId, media.id)).toMatchObject({
      storage_key: `${acme.businessId}/${media.id}`,
      size_bytes: PNG.length,
      content_type: 'image/png',
      sha256: served.sha256,
    });
    // Media id -> URL -> bytes, with the channel's token.
    const calls = graph.requests.filter((r) => r.path.endsWith(served.id) || r.query.mid === served.id);
    expect(calls.map((r) => r.path)).toEqual([`/v21.0/${served.id}`, '/whatsapp_business/attachments/']);
    expect(calls.every((r) => r.headers.authorization === `Bearer ${graph.accessToken}`)).toBe(true);
    fetched = { id: media.id, messageId: message.id };
  });

  it('GET /media/:id gives a signed address valid 120 minutes that serves the bytes', async () => {
    const before = Date.now();
    const res = await getMedia(acme, fetched.id);
    expect(res.statusCode).toBe(200);
    const { media } = res.json();
    expect(media).toMatchObject({ id: fetched.id, filename: null, contentType: 'image/png' });
    expect(media.url).toMatch(
      new RegExp(`^${PUBLIC_URL}/files/${fetched.id}\\?b=${acme.businessId}&exp=\\d+&sig=[A-Za-z0-9_-]{43}$`),
    );
    const expiresAt = Date.parse(media.expiresAt);
    expect(media.expiresAt).toMatch(/\.\d{6}Z$/);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 120 * 60_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 120 * 60_000);

    const file = await download(media.url);
    expect(file.statusCode).toBe(200);
    expect(file.rawPayload.equals(PNG)).toBe(true);
    expect(file.headers['content-type']).toBe('image/png');
    expect(file.headers['content-length']).toBe(String(PNG.length));
    expect(file.headers['content-disposition']).toBe(`inline; filename=media-${fetched.id}.png`);
    expect(file.headers['x-content-type-options']).toBe('nosniff');
  });

  it('refuses a tampered, expired or transplanted signature with 403', async () => {
    const { url } = (await getMedia(acme, fetched.id)).json().media as { url: string };
    const parsed = new URL(url);
    const sig = parsed.searchParams.get('sig')!;
    const variants: string[] = [];
    const swap = (name: string, value: string | null) => {
      const copy = new URL(url);
      if (value === null) copy.searchParams.delete(name);
      else copy.searchParams.set(name, value);
      variants.push(copy.toString());
    };
    swap('sig', `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`);
    swap('sig', `${sig}x`);
    swap('sig', null);
    swap('exp', String(Number(parsed.searchParams.get('exp')) + 3600));
    swap('b', other.businessId);
    variants.push(url.replace(`/files/${fetched.id}?`, `/files/${fetched.id + 1}?`));
    // Expired: signed 121 minutes ago with the service's own key.
    variants.push(signedMediaUrl(t.config, acme.businessId, fetched.id, Date.now() - 121 * 60_000).url);
    for (const variant of variants) {
      const res = await download(variant);
      expect(res.statusCode, variant).toBe(403);
      expect(res.json().error.code).toBe('forbidden');
    }
    // Signed by a different key.
    const foreign = signedMediaUrl(
      { secretKeys: ['another-secret-key-0123456789-0123456789'], publicUrl: PUBLIC_URL },
      acme.businessId,
      fetched.id,
    );
    expect((await download(foreign.url)).statusCode).toBe(403);
  });

  it('answers 404 for media of another business or none; 400 for a malformed id; 401 without a key', async () => {
    expect((await getMedia(other, fetched.id)).statusCode).toBe(404);
    expect((await getMedia(other, fetched.id)).json().error.code).toBe('not_found');
    expect((await getMedia(acme, 987654321)).statusCode).toBe(404);
    expect((await getMedia(acme, 'abc')).statusCode).toBe(400);
    expect((await getMedia(acme, 0)).statusCode).toBe(400);
    expect((await t.app.inject({ method: 'GET', url: `/external/v2/media/${fetched.id}` })).statusCode).toBe(401);
  });

  it('signs the files of messages for message lists and webhooks', async () => {
    const now = Date.now();
    const links = await t.app.services.media.forMessages(acme.businessId, [fetched.messageId], now);
    const [link] = links.get(fetched.messageId)!;
    expect(link).toEqual({
      id: fetched.id,
      filename: null,
      contentType: 'image/png',
      ...signedMediaUrl(t.config, acme.businessId, fetched.id, now),
    });
    expect((await download(link.url)).statusCode).toBe(200);
    expect((await t.app.services.media.forMessages(other.businessId, [fetched.messageId])).size).toBe(0);
  });

  it('does not fetch a stored file again when the job runs twice', async () => {
    const count = graph.requests.length;
    await enqueueJob(t.database.db, { businessId: acme.businessId, kind: 'media_fetch', refId: fetched.messageId });
    t.app.worker.wake('media_fetch');
    await until(async () => {
      const rows = await t.database.db
        .selectFrom('outbox')
        .select('state')
        .where('ref_id', '=', fetched.messageId)
        .execute();
      return rows.every((r) => r.state === 'done');
    });
    expect(graph.requests.length).toBe(count);
  });

  it('serves a document under its filename, and unsafe types as downloads', async () => {
    const pdf = graph.addMedia({ bytes: Buffer.from('%PDF-1.4 report'), mimeType: 'application/pdf' });
    const html = graph.addMedia({ bytes: Buffer.from('<script>alert(1)</script>'), mimeType: 'text/html' });
    const a = await inboundMedia(acme, { providerMediaId: pdf.id, filename: 'Informe año 2026.pdf' });
    const b = await inboundMedia(acme, { providerMediaId: html.id, filename: 'page.html' });
    await until(async () => (await job(a.message.id)).state === 'done' && (await job(b.message.id)).state === 'done');
    const docFile = await download((await getMedia(acme, a.media.id)).json().media.url);
    expect(docFile.headers['content-type']).toBe('application/pdf');
    expect(docFile.headers['content-disposition']).toBe(
      `inline; filename="Informe a?o 2026.pdf"; filename*=UTF-8''Informe%20a%C3%B1o%202026.pdf`,
    );
    const htmlFile = await download((await getMedia(acme, b.media.id)).json().media.url);
    expect(htmlFile.headers['content-disposition']).toBe('attachment; filename=page.html');
    expect(htmlFile.headers['content-security-policy']).toContain('sandbox');
  });

  it('leaves the message with a file-less media row when the provider refuses for good; the address answers 404', async () => {
    const { message, media } = await inboundMedia(acme, { providerMediaId: '999000111' });
    await until(async () => (await job(message.id)).state === 'failed');
    expect((await job(message.id)).last_error).toContain('does not exist');
    expect((await mediaRow(acme.businessId, media.id)).storage_key).toBeNull();
    expect(
      await t.database.db.selectFrom('messages').select('id').where('id', '=', message.id).executeTakeFirst(),
    ).toBeDefined();
    const res = await getMedia(acme, media.id);
    expect(res.statusCode).toBe(200);
    const file = await download(res.json().media.url);
    expect(file.statusCode).toBe(404);
  });

  it("records the file and the job's end in one commit: when the end fails, the file is not recorded either", async () => {
    const db = t.database.db;
    // The job's end fails (as if the process stopped between the two writes).
    await sql`create function media_job_refuse_done() returns trigger language plpgsql as $$
      begin if new.kind = 'media_fetch' and new.state = 'done' then raise exception 'refused'; end if; return new; end $$`.execute(
      db,
    );
    await sql`create trigger media_job_refuse_done before update on outbox for each row execute function media_job_refuse_done()`.execute(
      db,
    );
    try {
      const served = graph.addMedia({ bytes: PNG, mimeType: 'image/png' });
      const { message, media } = await inboundMedia(acme, { providerMediaId: served.id, sha256: served.sha256 });
      await until(async () => (await job(message.id)).attempts === 1 && (await job(message.id)).state === 'pending');
      expect((await job(message.id)).last_error).toContain('refused');
      expect((await mediaRow(acme.businessId, media.id)).storage_key).toBeNull();

      await sql`drop trigger media_job_refuse_done on outbox`.execute(db);
      await db
        .updateTable('outbox')
        .set({ run_at: sql`now()` })
        .where('ref_id', '=', message.id)
        .execute();
      t.app.worker.wake('media_fetch');
      await until(async () => (await job(message.id)).state === 'done');
      expect(await mediaRow(acme.businessId, media.id)).toMatchObject({
        storage_key: `${acme.businessId}/${media.id}`,
        sha256: served.sha256,
      });
    } finally {
      await sql`drop function if exists media_job_refuse_done() cascade`.execute(db);
    }
  });

  it('retries later when the bytes do not match the announced sha256', async () => {
    const served = graph.addMedia({ bytes: PNG, mimeType: 'image/png' });
    const { message, media } = await inboundMedia(acme, { providerMediaId: served.id, sha256: 'bm90IHRoZSBoYXNo' });
    await until(async () => (await job(message.id)).attempts === 1 && (await job(message.id)).state === 'pending');
    expect((await job(message.id)).last_error).toContain('sha256');
    expect((await mediaRow(acme.businessId, media.id)).storage_key).toBeNull();
  });

  it("gives the business's own URL for media it sent by link", async () => {
    const contact = await insertContact(t.database.db, acme.businessId, { phone_number: '5491155550009' });
    const conversation = await insertConversation(t.database.db, acme.businessId, contact.id);
    const message = await insertMessage(t.database.db, acme.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'SENT',
    });
    const row = await t.database.db
      .insertInto('media')
      .values({
        business_id: acme.businessId,
        message_id: message.id,
        source_url: 'https://cdn.acme.test/a.jpg',
        content_type: 'image/jpeg',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const res = await getMedia(acme, row.id);
    expect(res.json().media).toEqual({
      id: row.id,
      url: 'https://cdn.acme.test/a.jpg',
      filename: null,
      contentType: 'image/jpeg',
      expiresAt: null,
    });
  });
});
