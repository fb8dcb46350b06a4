import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { signedMediaUrl } from '../../src/modules/media/media.signing.ts';
import { aug, bulkMessages, contactWithConversation, WINDOW } from './exports/export-helpers.ts';
import { adminHeaders, createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildTestApp, testConfig, type TestApp } from '../helpers/test-app.ts';

/**
 * A rotation of SECRET_KEY: the test app runs with the old key; other apps over the same database
 * run with a new key, with and without the old one in SECRET_KEY_FALLBACKS.
 */
const NEW_KEY = 'the-new-secret-key-after-the-rotation-0123456789';

let before: TestApp;
let tenant: Tenant;
const after: FastifyInstance[] = [];

/** An app over the test app's database with these keys (its workers stopped). */
async function appWith(env: Record<string, string>): Promise<FastifyInstance> {
  const app = await buildApp(testConfig(env), { database: before.database, logger: false, workers: false });
  await app.ready();
  after.push(app);
  return app;
}

beforeAll(async () => {
  before = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(before.app);
});
afterAll(async () => {
  for (const app of after) await app.close();
  await before.close();
});

const oldKey = () => before.config.secretKeys[0];
const handshake = (app: FastifyInstance, token: string) =>
  app.inject({
    method: 'GET',
    url: `/channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=42`,
  });

describe('rotating SECRET_KEY with the old key among SECRET_KEY_FALLBACKS', () => {
  it('keeps channels working, and seals their secrets with the new key at start', async () => {
    const verifyToken = 'verify-token-before-rotation';
    const provider = {
      kind: 'whatsapp_cloud',
      phone_number_id: '800000000001',
      access_token: 'EAAG-rotated-token',
      app_secret: 'app-secret-rotated',
      verify_token: verifyToken,
    };
    const created = await before.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/channels`,
      headers: adminHeaders,
      payload: { type: 'whatsapp', identifier: '+15550009999', provider },
    });
    expect(created.statusCode).toBe(201);
    const { channel } = created.json();
    const storedConfig = async () =>
      (
        await before.database.db
          .selectFrom('channels')
          .select('provider_config')
          .where('id', '=', channel.id)
          .executeTakeFirstOrThrow()
      ).provider_config as Record<string, string>;
    const sealedBefore = await storedConfig();

    const rotated = await appWith({ SECRET_KEY: NEW_KEY, SECRET_KEY_FALLBACKS: oldKey() });
    // Before the start-up pass: found by the old digest, opened with the fallback.
    expect((await handshake(rotated, verifyToken)).body).toBe('42');
    const service = rotated.services.channels;
    expect(service.providerFor(await service.get(tenant.businessId, channel.id)).kind).toBe('whatsapp_cloud');

    expect(await service.sealStored()).toEqual({ sealed: 1, unopened: 0 });
    expect(await service.sealStored()).toEqual({ sealed: 0, unopened: 0 });
    const sealedAfter = await storedConfig();
    for (const field of ['access_token', 'app_secret', 'verify_token'])
      expect(sealedAfter[field]).not.toBe(sealedBefore[field]);
    // The new key alone opens everything now, and finds the channel by its verify token.
    const newOnly = new SecretBox([NEW_KEY], 'channel-secrets');
    expect(
      [sealedAfter.access_token, sealedAfter.app_secret, sealedAfter.verify_token].map((v) => newOnly.open(v)),
    ).toEqual(['EAAG-rotated-token', 'app-secret-rotated', verifyToken]);
    expect((await handshake(await appWith({ SECRET_KEY: NEW_KEY }), verifyToken)).body).toBe('42');
    expect((await handshake(rotated, verifyToken)).body).toBe('42');
    // The old key alone no longer opens them; its pass reports them and changes nothing.
    expect(await before.app.services.channels.sealStored()).toEqual({ sealed: 0, unopened: 1 });
    expect(await storedConfig()).toEqual(sealedAfter);
  });

  it('keeps webhooks signing with the same secrets and the same header values, sealed with the new key at start', async () => {
    const base = `/admin/v1/businesses/${tenant.businessId}/webhooks`;
    const created = await before.app.inject({
      method: 'POST',
      url: base,
      headers: adminHeaders,
      payload: {
        event: 'message_created',
        url: 'http://127.0.0.1:9/hook',
        headers: { Authorization: 'Bearer rotated-7777' },
      },
    });
    expect(created.statusCode).toBe(201);
    const { webhook, secret: first } = created.json();
    const rotatedSecret = await before.app.inject({
      method: 'POST',
      url: `${base}/${webhook.id}/rotate-secret`,
      headers: adminHeaders,
    });
    const { secret: second } = rotatedSecret.json();
    const stored = () =>
      before.database.db
        .selectFrom('webhooks')
        .select(['secret', 'previous_secret', 'headers'])
        .where('id', '=', webhook.id)
        .executeTakeFirstOrThrow();
    const headersOf = async (app: FastifyInstance) =>
      (await app.inject({ method: 'GET', url: `${base}/${webhook.id}`, headers: adminHeaders })).json().webhook.headers;
    const sealedBefore = (await stored()).headers.Authorization;

    const rotated = await appWith({ SECRET_KEY: NEW_KEY, SECRET_KEY_FALLBACKS: oldKey() });
    expect(await headersOf(rotated)).toEqual({ Authorization: '••••7777' });
    expect((await rotated.services.webhooks.service.sealStored()).sealed).toBeGreaterThanOrEqual(1);
    expect(await rotated.services.webhooks.service.sealStored()).toEqual({ sealed: 0, unopened: 0 });
    const newOnly = new SecretBox([NEW_KEY], 'webhook-secrets');
    const row = await stored();
    expect([newOnly.open(row.secret), newOnly.open(row.previous_secret!)]).toEqual([second, first]);
    expect(row.headers.Authorization).not.toBe(sealedBefore);
    expect(new SecretBox([NEW_KEY], 'webhook-headers').open(row.headers.Authorization)).toBe('Bearer rotated-7777');
    expect(await headersOf(await appWith({ SECRET_KEY: NEW_KEY }))).toEqual({ Authorization: '••••7777' });
    // The old key alone opens nothing any more: the value shows none of its characters.
    expect(await headersOf(before.app)).toEqual({ Authorization: '••••' });
  });

  it('accepts export cursors and media links signed with the old key, and not once it is dropped', async () => {
    const db = before.database.db;
    const { conversation } = await contactWithConversation(db, tenant.businessId);
    const [message] = await bulkMessages(db, tenant.businessId, conversation, [
      { created_at: aug(1) },
      { created_at: aug(2) },
    ]);
    const page = await before.app.inject({
      method: 'GET',
      url: `/external/v2/messages?${WINDOW}&limit=1`,
      headers: tenant.headers,
    });
    const cursor = encodeURIComponent(page.json().next_cursor);
    const nextPage = (app: FastifyInstance) =>
      app.inject({
        method: 'GET',
        url: `/external/v2/messages?${WINDOW}&limit=1&cursor=${cursor}`,
        headers: tenant.headers,
      });
    const media = await db
      .insertInto('media')
      .values({ business_id: tenant.businessId, message_id: message.id, content_type: 'image/png' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const link = new URL(signedMediaUrl(before.config, tenant.businessId, media.id).url);
    // The row has no stored file: 404 once the signature is accepted, 403 when it is not.
    const download = (app: FastifyInstance) => app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });

    const rotated = await appWith({
      SECRET_KEY: NEW_KEY,
      SECRET_KEY_FALLBACKS: `${oldKey()}, another-fallback-key-0123456789-0123456789`,
    });
    expect((await nextPage(rotated)).statusCode).toBe(200);
    expect((await nextPage(rotated)).json().messages).toEqual((await nextPage(before.app)).json().messages);
    expect((await download(rotated)).statusCode).toBe(404);
    // New cursors are signed with the new key: the old process does not accept them.
    const fresh = (
      await rotated.inject({ method: 'GET', url: `/external/v2/messages?${WINDOW}&limit=1`, headers: tenant.headers })
    ).json().next_cursor;
    expect(
      (
        await before.app.inject({
          method: 'GET',
          url: `/external/v2/messages?${WINDOW}&limit=1&cursor=${encodeURIComponent(fresh)}`,
          headers: tenant.headers,
        })
      ).statusCode,
    ).toBe(400);

    const dropped = await appWith({ SECRET_KEY: NEW_KEY });
    expect((await nextPage(dropped)).statusCode).toBe(400);
    expect((await download(dropped)).statusCode).toBe(403);
  });
});
