import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inboundMessage, startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { notificationFor, postSigned } from '../inbound/whatsapp-helpers.ts';
import { inboundContact, settled, until, type TestChannel } from '../sending/sending.fixtures.ts';

// A channel's URLs and every call that carries its token obey the address policy of webhook
// deliveries: with private targets disallowed (the default), the fake Graph API on loopback must
// never be reached, by a literal address or by a name that resolves to it.

let strict: TestApp;
let lenient: TestApp;
let graph: FakeGraphApi;
let tenant: Tenant;
/** The business of the same name in the lenient app (its own database). */
let lenientTenant: Tenant;
let seq = 0;

beforeAll(async () => {
  graph = await startFakeGraphApi();
  strict = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'false' });
  lenient = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: false });
  tenant = await createTenant(strict.app);
  lenientTenant = await createTenant(lenient.app);
});
afterAll(async () => {
  await strict.close();
  await lenient.close();
  await graph.close();
});
beforeEach(() => graph.reset());

const PUBLIC_BASE = 'https://graph.example.com/v21.0';
const channelsUrl = (bid: string, id?: string) => `/admin/v1/businesses/${bid}/channels${id ? `/${id}` : ''}`;
const whatsapp = (apiBaseUrl: string) => {
  seq += 1;
  const phoneNumberId = String(500_000_000_000 + seq);
  return {
    type: 'whatsapp',
    identifier: `1555300${String(seq).padStart(4, '0')}`,
    provider: {
      kind: 'whatsapp_cloud',
      phone_number_id: phoneNumberId,
      access_token: graph.accessToken,
      app_secret: `app-secret-${seq}`,
      verify_token: `verify-${seq}`,
      api_base_url: apiBaseUrl,
    },
  };
};
const businessOf = (app: TestApp) => (app === strict ? tenant : lenientTenant).businessId;
const create = (app: TestApp, payload: object) =>
  app.app.inject({ method: 'POST', url: channelsUrl(businessOf(app)), headers: adminHeaders, payload });
const listBody = async (app = strict) =>
  (await app.app.inject({ method: 'GET', url: channelsUrl(businessOf(app)), headers: adminHeaders })).body;
/** A channel made through the operator API, as sending.fixtures' TestChannel. */
async function createChannel(apiBaseUrl: string): Promise<TestChannel & { appSecret: string }> {
  const body = whatsapp(apiBaseUrl);
  const res = await create(strict, body);
  expect(res.statusCode, res.body).toBe(201);
  const { id } = res.json().channel;
  return {
    id,
    identifier: body.identifier,
    phoneNumberId: body.provider.phone_number_id,
    appSecret: `app-secret-${seq}`,
  };
}
/** The Graph API's base under a name that resolves to loopback. */
const byName = () => graph.baseUrl.replace('127.0.0.1', 'localhost');

const refusedAddresses = [
  'http://127.0.0.1:8080/v21.0',
  'http://169.254.169.254/latest/meta-data/',
  'http://[::1]/v21.0',
  'http://10.0.0.7/v21.0',
  'http://[fe80::1]/v21.0',
  'http://[::ffff:169.254.169.254]/v21.0',
  'http://2130706433/v21.0',
  'http://0/v21.0',
];
const refusedAnywhere: [string, RegExp][] = [
  [
    'https://ops:hunter2@graph.example.com/v21.0',
    /"provider\.api_base_url refused: credentials in the URL are not allowed"/,
  ],
  [
    'https://:hunter2@graph.example.com/v21.0',
    /"provider\.api_base_url refused: credentials in the URL are not allowed"/,
  ],
  ['ftp://graph.example.com/v21.0', /api_base_url/],
  ['file:///etc/passwd', /api_base_url/],
];

describe('the URL of a channel, with private targets disallowed', () => {
  it('refuses literal private, loopback, link-local and metadata addresses at creation, naming the setting', async () => {
    for (const url of refusedAddresses) {
      const body = whatsapp(url);
      const res = await create(strict, body);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'validation_error',
        message: expect.stringMatching(
          /^provider\.api_base_url refused: \S+ is not a public address \(a service started with ALLOW_PRIVATE_WEBHOOK_TARGETS=true accepts private and loopback addresses\)$/,
        ),
        details: [{ path: '/provider/api_base_url' }],
      });
      expect(await listBody(), url).not.toContain(body.identifier);
    }
  });

  it('refuses a host name that resolves to a private address, at creation and on PATCH', async () => {
    const res = await create(strict, whatsapp(byName()));
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(
      /^provider\.api_base_url refused: localhost resolves to (127\.0\.0\.1|::1), not a public address/,
    );
    const channel = await createChannel(PUBLIC_BASE);
    const patch = await strict.app.inject({
      method: 'PATCH',
      url: channelsUrl(tenant.businessId, channel.id),
      headers: adminHeaders,
      payload: { provider: { api_base_url: byName() } },
    });
    expect(patch.statusCode).toBe(400);
    expect(patch.json().error.details).toEqual([{ path: '/provider/api_base_url' }]);
  });

  it('refuses credentials in the URL and schemes other than http(s), without echoing them', async () => {
    for (const [url, message] of refusedAnywhere) {
      for (const app of [strict, lenient]) {
        const body = whatsapp(url);
        const res = await create(app, body);
        expect(res.statusCode, url).toBe(400);
        expect(res.json().error.code).toBe('validation_error');
        // The schema refuses other schemes (its details name the field); the service, credentials.
        expect(JSON.stringify(res.json().error)).toMatch(message);
        expect(res.body).not.toContain('hunter2');
        expect(await listBody(app), url).not.toContain(body.identifier);
      }
    }
  });

  it('refuses the same on PATCH, keeping the stored URL', async () => {
    const channel = await createChannel(PUBLIC_BASE);
    for (const [url] of [...refusedAddresses.map((u) => [u]), ...refusedAnywhere]) {
      const res = await strict.app.inject({
        method: 'PATCH',
        url: channelsUrl(tenant.businessId, channel.id),
        headers: adminHeaders,
        payload: { provider: { api_base_url: url } },
      });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
      expect(res.body).not.toContain('hunter2');
    }
    const read = await strict.app.inject({
      method: 'GET',
      url: channelsUrl(tenant.businessId, channel.id),
      headers: adminHeaders,
    });
    expect(read.json().channel.provider.api_base_url).toBe(PUBLIC_BASE);
    const moved = await strict.app.inject({
      method: 'PATCH',
      url: channelsUrl(tenant.businessId, channel.id),
      headers: adminHeaders,
      payload: { provider: { api_base_url: 'https://157.240.22.35/v22.0' } },
    });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().channel.provider.api_base_url).toBe('https://157.240.22.35/v22.0');
  });

  it('accepts loopback when private targets are allowed', async () => {
    const res = await create(lenient, whatsapp(graph.baseUrl));
    expect(res.statusCode).toBe(201);
    expect(res.json().channel.provider.api_base_url).toBe(graph.baseUrl);
  });

  it('never shows credentials a stored URL holds (a row written before they were refused)', async () => {
    const channel = await createChannel(PUBLIC_BASE);
    await sql`update channels set provider_config = jsonb_set(provider_config, '{api_base_url}',
      to_jsonb(${'https://ops:hunter2@graph.example.com/v21.0'}::text)) where id = ${channel.id}`.execute(
      strict.database.db,
    );
    const list = await listBody();
    const one = await strict.app.inject({
      method: 'GET',
      url: channelsUrl(tenant.businessId, channel.id),
      headers: adminHeaders,
    });
    for (const text of [list, one.body]) {
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('ops:');
    }
    expect(one.json().channel.provider.api_base_url).toBe(PUBLIC_BASE);
  });
});

describe('calls that carry the token, with private targets disallowed', () => {
  const send = (channelId: string, to: string) =>
    strict.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: { to, from: 'whatsapp', type: 'text', content: { text: 'hi' }, channel_uuid: channelId },
    });
  /** A channel whose host name resolved to a public address when stored, and now resolves to loopback. */
  const rebound = async () => {
    const channel = await createChannel(PUBLIC_BASE);
    await sql`update channels set provider_config = jsonb_set(provider_config, '{api_base_url}',
      to_jsonb(${byName()}::text)) where id = ${channel.id}`.execute(strict.database.db);
    return channel;
  };
  const sendJob = (messageId: string) =>
    strict.database.db.selectFrom('outbox').selectAll().where('ref_id', '=', messageId).executeTakeFirstOrThrow();

  it('a send to a host name that resolves to loopback fails once and for all, and nothing reaches the host', async () => {
    const channel = await rebound();
    const { phone } = await inboundContact(strict, tenant, channel, 1);
    const res = await send(channel.id, phone);
    expect(res.statusCode, res.body).toBe(200);
    const row = await settled(strict, res.json().message.uuid as string);
    expect(row.status).toBe('ERROR');
    expect(row.error).toMatch(
      /^target_refused: provider address refused: localhost resolves to (127\.0\.0\.1|::1), not a public address$/,
    );
    expect(await sendJob(row.id)).toMatchObject({ state: 'failed', attempts: 1 });
    expect(graph.requests).toEqual([]);
    expect(graph.connections()).toBe(0);
  });

  it('a literal loopback address stored while it was allowed is refused at the call, before connecting', async () => {
    const channel = await createChannel(PUBLIC_BASE);
    // As a process that allowed private targets would have stored it.
    await sql`update channels set provider_config = jsonb_set(provider_config, '{api_base_url}',
      to_jsonb(${graph.baseUrl}::text)) where id = ${channel.id}`.execute(strict.database.db);
    const { phone } = await inboundContact(strict, tenant, channel, 1);
    const row = await settled(strict, (await send(channel.id, phone)).json().message.uuid as string);
    expect(row).toMatchObject({
      status: 'ERROR',
      error: 'target_refused: provider address refused: 127.0.0.1 is not a public address',
    });
    expect(graph.requests).toEqual([]);
    expect(graph.connections()).toBe(0);
  });

  it("an inbound message's media is not fetched from such a host: the job fails once and for all", async () => {
    const channel = await rebound();
    const media = graph.addMedia({ bytes: Buffer.from('%PDF-1.4 invoice'), mimeType: 'application/pdf' });
    const message = inboundMessage('5491122334455', 'document', {
      id: media.id,
      mime_type: 'application/pdf',
      sha256: media.sha256,
    });
    const notification = notificationFor(
      { ...channel, businessId: tenant.businessId, verifyToken: '' },
      { messages: [message] },
    );
    expect((await postSigned(strict.app, notification, channel.appSecret)).statusCode).toBe(200);
    const db = strict.database.db;
    const stored = await db
      .selectFrom('messages')
      .select('id')
      .where('provider_message_id', '=', message.id as string)
      .executeTakeFirstOrThrow();
    const job = () => sendJob(stored.id);
    await until(async () => (await job()).state === 'failed');
    expect(await job()).toMatchObject({
      kind: 'media_fetch',
      attempts: 1,
      last_error: expect.stringMatching(/^provider address refused: localhost resolves to (127\.0\.0\.1|::1)/),
    });
    const file = await db.selectFrom('media').selectAll().where('message_id', '=', stored.id).executeTakeFirstOrThrow();
    expect(file.storage_key).toBeNull();
    expect(graph.requests).toEqual([]);
    expect(graph.connections()).toBe(0);
  });
});
