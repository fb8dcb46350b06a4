import { sql } from 'kysely';
import { newId } from '../../../src/lib/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openProviderConfig } from '../../../src/modules/channels/channel-secrets.ts';
import { channelsRepository } from '../../../src/modules/channels/channels.repository.ts';
import { SecretBox } from '../../../src/lib/secret-box.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildApp } from '../../../src/app.ts';
import { inboundMessage, metaNotification } from '../../helpers/fake-graph-api.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';
import { postSigned } from '../inbound/whatsapp-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let seq = 0;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const url = (bid: string, id?: string) => `/admin/v1/businesses/${bid}/channels${id ? `/${id}` : ''}`;
const provider = (overrides: Record<string, unknown> = {}) => ({
  kind: 'whatsapp_cloud',
  phone_number_id: String(900_000_000_000 + ++seq),
  access_token: 'EAAG-secret-token',
  app_secret: 'app-secret-value',
  verify_token: 'verify-token-value',
  ...overrides,
});
const whatsapp = (overrides: Record<string, unknown> = {}) => ({
  type: 'whatsapp',
  identifier: `+1555000${String(++seq).padStart(4, '0')}`,
  provider: provider(),
  ...overrides,
});
const create = (payload: unknown, bid = tenant.businessId) =>
  t.app.inject({ method: 'POST', url: url(bid), headers: adminHeaders, payload: payload as object });
/** The stored config of a channel as the service reads it, with the test app's SECRET_KEY. */
const opened = (stored: unknown) =>
  openProviderConfig(new SecretBox(t.config.secretKeys, 'channel-secrets'), stored as Record<string, unknown>);
const secretsIn = (text: string) =>
  ['EAAG-secret-token', 'app-secret-value', 'verify-token-value', 'rotated'].filter((s) => text.includes(s));

describe('POST /admin/v1/businesses/:bid/channels', () => {
  it('creates a whatsapp channel and never echoes its secrets', async () => {
    const body = whatsapp({ name: 'Sales line', pace_per_second: 500 });
    const res = await create(body);
    expect(res.statusCode).toBe(201);
    const { channel } = res.json();
    expect(channel).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      type: 'whatsapp',
      name: 'Sales line',
      identifier: body.identifier.slice(1),
      pace_per_second: 500,
      provider: { kind: 'whatsapp_cloud', account: body.provider.phone_number_id },
      agent_id: null,
      needs_credentials: false,
      created_at: expect.stringMatching(/\.\d{6}Z$/),
    });
    expect(secretsIn(res.body)).toEqual([]);
    const row = await t.database.db
      .selectFrom('channels')
      .selectAll()
      .where('id', '=', channel.id)
      .executeTakeFirstOrThrow();
    expect(opened(row.provider_config)).toEqual(body.provider);
    expect(row.provider_account).toBe(body.provider.phone_number_id);
  });

  it('defaults the name and the pace, and keeps api_base_url visible', async () => {
    const body = whatsapp({ provider: provider({ api_base_url: 'https://graph.example.com/v21.0' }) });
    const { channel } = (await create(body)).json();
    expect(channel.name).toBe(`whatsapp ${body.identifier.slice(1)}`);
    expect(channel.pace_per_second).toBe(80);
    expect(channel.provider.api_base_url).toBe('https://graph.example.com/v21.0');
  });

  it('refuses a channel without the provider its type is sent and received through', async () => {
    const res = await create({ type: 'whatsapp_web', identifier: '+15550009999' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([expect.objectContaining({ path: '/provider' })]);
  });

  it("refuses an identifier that is not the provider's account, for the kinds identified by it", async () => {
    const sms = (identifier: string, from: string) => ({
      type: 'sms',
      identifier,
      provider: { kind: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: 'sms-auth-token', from_number: from },
    });
    const wrong = await create(sms('+14155550101', '+14155550102'));
    expect(wrong.statusCode, wrong.body).toBe(400);
    expect(wrong.json().error.details).toEqual([expect.objectContaining({ path: '/identifier' })]);
    expect((await create(sms('14155550103', '+14155550103'))).statusCode).toBe(201);
    const page = (identifier: string) => ({
      type: 'messenger',
      identifier,
      provider: {
        kind: 'messenger',
        page_id: '104250000000777',
        access_token: 'page-token',
        app_secret: 'page-app-secret',
        verify_token: 'page-verify',
      },
    });
    expect((await create(page('104250000000778'))).statusCode).toBe(400);
    expect((await create(page('104250000000777'))).statusCode).toBe(201);
  });

  it('answers 409 for a duplicate identifier or phone_number_id (any business)', async () => {
    const first = whatsapp();
    expect((await create(first)).statusCode).toBe(201);
    const sameNumber = await create(whatsapp({ identifier: first.identifier }));
    expect(sameNumber.statusCode).toBe(409);
    expect(sameNumber.json().error.code).toBe('conflict');
    const sameAccount = await create(
      whatsapp({ provider: provider({ phone_number_id: first.provider.phone_number_id }) }),
      other.businessId,
    );
    expect(sameAccount.statusCode).toBe(409);
    // The same number in another business is that business's own channel.
    expect((await create(whatsapp({ identifier: first.identifier }), other.businessId)).statusCode).toBe(201);
  });

  it.each([
    ['an unknown type', { type: 'pigeon', identifier: 'x' }],
    ['whatsapp without provider', { type: 'whatsapp', identifier: '15550001111' }],
    ['whatsapp identifier not digits', whatsappBody({ identifier: '555-abc' })],
    ['a provider for another channel type', { type: 'sms', identifier: '15550001111', provider: provider() }],
    ['an unknown provider kind', whatsappBody({ provider: { ...provider(), kind: 'twilio' } })],
    [
      'a provider missing its app_secret',
      whatsappBody({
        provider: { kind: 'whatsapp_cloud', phone_number_id: '1', access_token: 'a', verify_token: 'v' },
      }),
    ],
    ['an unknown field', whatsappBody({ colour: 'red' })],
    ['an unknown provider field', whatsappBody({ provider: { ...provider(), extra: 1 } })],
    // An access token travels in an Authorization: Bearer header, which cannot carry these.
    [
      'an access token with a line break',
      whatsappBody({ provider: provider({ access_token: 'EAAG\nX-Injected: 1' }) }),
    ],
    ['an access token with a space', whatsappBody({ provider: provider({ access_token: 'EAAG token' }) })],
    ['an access token with a letter outside ASCII', whatsappBody({ provider: provider({ access_token: 'EAAGé' }) })],
    ['a pace over the limit', whatsappBody({ pace_per_second: 1001 })],
    ['a pace given as text', whatsappBody({ pace_per_second: '80' })],
    ['a name over 200 characters', whatsappBody({ name: 'n'.repeat(201) })],
    ['an identifier over 200 characters', { type: 'web_embed', identifier: 'i'.repeat(201) }],
    ['a blank identifier', { type: 'web_embed', identifier: '   ' }],
  ])('answers 400 for %s', async (_case, body) => {
    const res = await create(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 400 for malformed JSON and 404 for an unknown business', async () => {
    const bad = await t.app.inject({
      method: 'POST',
      url: url(tenant.businessId),
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      payload: '{"type":',
    });
    expect(bad.statusCode).toBe(400);
    const missing = await create(whatsapp(), '0190a000-0000-7000-8000-000000000000');
    expect(missing.statusCode).toBe(404);
  });

  it('requires the admin token', async () => {
    const res = await t.app.inject({ method: 'POST', url: url(tenant.businessId), payload: whatsapp() });
    expect(res.statusCode).toBe(401);
  });
});

function whatsappBody(overrides: Record<string, unknown>) {
  return {
    type: 'whatsapp',
    identifier: '15550009999',
    provider: { kind: 'whatsapp_cloud', phone_number_id: '77', access_token: 'a', app_secret: 's', verify_token: 'v' },
    ...overrides,
  };
}

describe('GET, PATCH, DELETE /admin/v1/businesses/:bid/channels/:id', () => {
  it('lists and reads the channels of the business only, without secrets', async () => {
    const biz = await createTenant(t.app, 'Lister');
    const a = (await create(whatsapp({ name: 'A' }), biz.businessId)).json().channel;
    const b = (await create(whatsapp({ name: 'B' }), biz.businessId)).json().channel;
    const list = await t.app.inject({ method: 'GET', url: url(biz.businessId), headers: adminHeaders });
    expect(list.statusCode).toBe(200);
    expect(list.json().channels.map((c: { id: string }) => c.id)).toEqual([a.id, b.id]);
    expect(secretsIn(list.body)).toEqual([]);
    const limited = await t.app.inject({ method: 'GET', url: `${url(biz.businessId)}?limit=1`, headers: adminHeaders });
    expect(limited.json().channels).toHaveLength(1);
    const one = await t.app.inject({ method: 'GET', url: url(biz.businessId, a.id), headers: adminHeaders });
    expect(one.json()).toEqual({ channel: a });
    const foreign = await t.app.inject({ method: 'GET', url: url(other.businessId, a.id), headers: adminHeaders });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('not_found');
  });

  it('renames, re-paces and rotates secrets; the new secret is used, never shown', async () => {
    const body = whatsapp();
    const { channel } = (await create(body)).json();
    const res = await t.app.inject({
      method: 'PATCH',
      url: url(tenant.businessId, channel.id),
      headers: adminHeaders,
      payload: { name: 'Renamed', pace_per_second: 1000, provider: { app_secret: 'rotated', access_token: 'rotated' } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().channel).toMatchObject({ id: channel.id, name: 'Renamed', pace_per_second: 1000 });
    expect(secretsIn(res.body)).toEqual([]);
    const row = await t.database.db
      .selectFrom('channels')
      .selectAll()
      .where('id', '=', channel.id)
      .executeTakeFirstOrThrow();
    expect(opened(row.provider_config)).toEqual({ ...body.provider, app_secret: 'rotated', access_token: 'rotated' });
    expect(secretsIn(JSON.stringify(row.provider_config))).toEqual([]);
    const service = t.app.services.channels;
    const provider = service.providerFor(await service.get(tenant.businessId, channel.id));
    const payload = Buffer.from('{}');
    const { createHmac } = await import('node:crypto');
    const sign = (secret: string) => `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`;
    expect(provider.verifySignature(payload, { 'x-hub-signature-256': sign('rotated') })).toBe(true);
    expect(provider.verifySignature(payload, { 'x-hub-signature-256': sign('app-secret-value') })).toBe(false);
  });

  it('caches channels for notifications and sends only while every change is heard', async () => {
    const { channel } = (await create(whatsapp())).json();
    const service = t.app.services.channels;
    const account = channel.provider.account as string;
    // A change no announcement tells of, as if another process made it while this one was not listening.
    const renameUnheard = (name: string) =>
      t.database.db.updateTable('channels').set({ name }).where('id', '=', channel.id).execute();
    try {
      await service.findByProviderAccount('whatsapp_cloud', account);
      await service.findForSending(tenant.businessId, channel.id);
      await renameUnheard('Unheard');
      expect((await service.findByProviderAccount('whatsapp_cloud', account))?.name).not.toBe('Unheard');
      service.setTrusted(false);
      expect((await service.findByProviderAccount('whatsapp_cloud', account))?.name).toBe('Unheard');
      await renameUnheard('Unheard again');
      expect((await service.findByProviderAccount('whatsapp_cloud', account))?.name).toBe('Unheard again');
      expect((await service.findForSending(tenant.businessId, channel.id))?.name).toBe('Unheard again');
      // An announcement forgets the channel's copies.
      service.setTrusted(true);
      await service.findByProviderAccount('whatsapp_cloud', account);
      await renameUnheard('Announced');
      service.forgetAnnounced(
        JSON.stringify({
          business_id: tenant.businessId,
          id: channel.id,
          provider_kind: 'whatsapp_cloud',
          provider_account: account,
        }),
      );
      expect((await service.findByProviderAccount('whatsapp_cloud', account))?.name).toBe('Announced');
    } finally {
      service.setTrusted(true); // as it is here: one process, or listening
    }
  });

  // Only PostgreSQL serves several processes; within one, the rotation above is used at once.
  it.runIf(engine === 'postgres')(
    'stops taking a replaced app secret in another server process as soon as it hears of the rotation',
    async () => {
      const body = whatsapp();
      const { channel } = (await create(body)).json();
      const second = await buildApp(t.config, { database: t.database, logger: false, workers: false });
      await second.ready();
      try {
        const notify = (app: typeof second, secret: string) => {
          const from = `1415${String(++seq).padStart(7, '0')}`;
          const notification = metaNotification({
            phoneNumberId: body.provider.phone_number_id,
            contacts: [{ waId: from, name: 'Ada' }],
            messages: [inboundMessage(from, 'text', { body: 'hi' })],
          });
          return postSigned(app, notification, secret);
        };
        // The second process has read (and cached) the channel.
        expect((await notify(second, 'app-secret-value')).statusCode).toBe(200);
        const rotated = await t.app.inject({
          method: 'PATCH',
          url: url(tenant.businessId, channel.id),
          headers: adminHeaders,
          payload: { provider: { app_secret: 'rotated' } },
        });
        expect(rotated.statusCode).toBe(200);
        // Within the time an announcement takes, far under the 30 s the channel would be kept without one.
        const deadline = Date.now() + 2_000;
        let status = 200;
        while (status !== 401 && Date.now() < deadline) {
          status = (await notify(second, 'app-secret-value')).statusCode;
          if (status !== 401) await new Promise((r) => setTimeout(r, 5));
        }
        expect(status).toBe(401);
        expect((await notify(second, 'rotated')).statusCode).toBe(200);
      } finally {
        await second.close();
      }
    },
  );

  it('refuses to change the phone_number_id or unknown fields, and 404s another business', async () => {
    const { channel } = (await create(whatsapp())).json();
    const patch = (payload: unknown, bid = tenant.businessId) =>
      t.app.inject({ method: 'PATCH', url: url(bid, channel.id), headers: adminHeaders, payload: payload as object });
    expect((await patch({ provider: { phone_number_id: '1' } })).statusCode).toBe(400);
    expect((await patch({ type: 'sms' })).statusCode).toBe(400);
    expect((await patch({ pace_per_second: 0 })).statusCode).toBe(400);
    expect((await patch({ name: 'x' }, other.businessId)).statusCode).toBe(404);
    expect((await patch({}, other.businessId)).statusCode).toBe(404);
    // Nothing to change: the channel as it is.
    const unchanged = await patch({});
    expect(unchanged.statusCode).toBe(200);
    expect(unchanged.json().channel).toEqual(channel);
    // A channel without a provider (written by a version whose type no provider served).
    const noProvider = await t.database.db
      .insertInto('channels')
      .values({
        business_id: tenant.businessId,
        id: newId(),
        type: 'whatsapp_web',
        name: 'web',
        identifier: `ops${++seq}`,
        provider_config: '{}',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const rotate = await t.app.inject({
      method: 'PATCH',
      url: url(tenant.businessId, noProvider.id),
      headers: adminHeaders,
      payload: { provider: { app_secret: 'x' } },
    });
    expect(rotate.statusCode).toBe(400);
  });

  it('deletes a channel of the business only', async () => {
    const { channel } = (await create(whatsapp())).json();
    const foreign = await t.app.inject({
      method: 'DELETE',
      url: url(other.businessId, channel.id),
      headers: adminHeaders,
    });
    expect(foreign.statusCode).toBe(404);
    const res = await t.app.inject({
      method: 'DELETE',
      url: url(tenant.businessId, channel.id),
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    const again = await t.app.inject({ method: 'GET', url: url(tenant.businessId, channel.id), headers: adminHeaders });
    expect(again.statusCode).toBe(404);
    expect(
      (await t.app.inject({ method: 'DELETE', url: url(tenant.businessId, channel.id), headers: adminHeaders }))
        .statusCode,
    ).toBe(404);
  });

  it("frees a deleted channel's provider account for any business", async () => {
    const body = whatsapp();
    const { channel } = (await create(body)).json();
    await t.app.inject({ method: 'DELETE', url: url(tenant.businessId, channel.id), headers: adminHeaders });
    const account = body.provider.phone_number_id;
    expect(await t.app.services.channels.findByProviderAccount('whatsapp_cloud', account)).toBeUndefined();
    const again = await create(whatsapp({ provider: provider({ phone_number_id: account }) }), other.businessId);
    expect(again.statusCode).toBe(201);
    const found = await t.app.services.channels.findByProviderAccount('whatsapp_cloud', account);
    expect(found).toMatchObject({ business_id: other.businessId, id: again.json().channel.id });
  });

  it('refuses in the database a second channel of a provider account, leaving no channel row', async () => {
    const body = whatsapp();
    expect((await create(body)).statusCode).toBe(201);
    // As a creation that passed the service's check while another was being written would.
    const id = newId();
    await expect(
      channelsRepository.insert(t.database.db, {
        business_id: other.businessId,
        id,
        type: 'whatsapp',
        name: 'racing',
        identifier: '15550009999',
        provider_kind: 'whatsapp_cloud',
        provider_account: body.provider.phone_number_id,
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await channelsRepository.find(t.database.db, other.businessId, id)).toBeUndefined();
  });

  it('answers 400 for a malformed id', async () => {
    const res = await t.app.inject({ method: 'GET', url: url(tenant.businessId, 'nope'), headers: adminHeaders });
    expect(res.statusCode).toBe(400);
  });
});

describe('ChannelsService lookups', () => {
  it('finds channels by identifier and provider account', async () => {
    const body = whatsapp();
    const { channel } = (await create(body)).json();
    const service = t.app.services.channels;
    expect((await service.findByIdentifier(tenant.businessId, 'whatsapp', body.identifier.slice(1)))?.id).toBe(
      channel.id,
    );
    expect(await service.findByIdentifier(other.businessId, 'whatsapp', body.identifier.slice(1))).toBeUndefined();
    expect((await service.findByProviderAccount('whatsapp_cloud', body.provider.phone_number_id))?.id).toBe(channel.id);
    expect(await service.findByProviderAccount('whatsapp_cloud', '1')).toBeUndefined();
    const provider = service.providerFor(await service.get(tenant.businessId, channel.id));
    expect(provider.kind).toBe('whatsapp_cloud');
    expect(service.providerFor(await service.get(tenant.businessId, channel.id))).toBe(provider);
    await expect(service.get(other.businessId, channel.id)).rejects.toMatchObject({ kind: 'not_found' });
  });
});

describe('provider secrets at rest', () => {
  const storedText = async (id: string) =>
    (
      await sql<{ text: string }>`select provider_config::text as text from channels where id = ${id}`.execute(
        t.database.db,
      )
    ).rows[0].text;
  const handshake = (token: string) =>
    t.app.inject({
      method: 'GET',
      url: `/channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`,
    });

  it('stores the access token, app secret and verify token sealed, and finds the channel by its verify token', async () => {
    const token = `verify-token-value-${++seq}`;
    const { channel } = (await create(whatsapp({ provider: provider({ verify_token: token }) }))).json();
    const text = await storedText(channel.id);
    expect(secretsIn(text)).toEqual([]);
    expect(text).not.toContain(token);
    expect(JSON.parse(text)).toMatchObject({
      access_token: expect.stringMatching(/^sb1\./),
      app_secret: expect.stringMatching(/^sb1\./),
      verify_token: expect.stringMatching(/^sb1\./),
    });
    const res = await handshake(token);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('1158201444');
    expect((await handshake(`${token}x`)).statusCode).toBe(403);
    expect((await t.app.services.channels.findBySecret('whatsapp_cloud', 'verify_token', token))?.id).toBe(channel.id);
  });

  it('seals the secrets of a channel stored in the clear by an earlier version, once', async () => {
    const token = `legacy-verify-${++seq}`;
    const body = whatsapp({
      provider: provider({ verify_token: token, access_token: 'legacy-access', app_secret: 'legacy-app' }),
    });
    const { channel } = (await create(body)).json();
    await t.database.db
      .updateTable('channels')
      .set({ provider_config: JSON.stringify(body.provider) })
      .where('id', '=', channel.id)
      .execute();
    expect(await storedText(channel.id)).toContain('legacy-access');
    // Read in the clear meanwhile, so sends keep working until the service starts again.
    const service = t.app.services.channels;
    expect(service.providerFor(await service.get(tenant.businessId, channel.id)).kind).toBe('whatsapp_cloud');

    expect((await service.sealStored()).sealed).toBeGreaterThanOrEqual(1);
    const text = await storedText(channel.id);
    expect(['legacy-access', 'legacy-app', token].filter((s) => text.includes(s))).toEqual([]);
    expect(opened(JSON.parse(text))).toEqual(body.provider);
    expect((await handshake(token)).statusCode).toBe(200);
    expect(await service.sealStored()).toEqual({ sealed: 0, unopened: 0 });
  });

  it('does not open the secrets with another SECRET_KEY', async () => {
    const { channel } = (await create(whatsapp())).json();
    const stored = JSON.parse(await storedText(channel.id)) as Record<string, unknown>;
    expect(() =>
      openProviderConfig(new SecretBox(['another-secret-key-of-at-least-32-chars'], 'channel-secrets'), stored),
    ).toThrow(/SECRET_KEY/);
  });
});
