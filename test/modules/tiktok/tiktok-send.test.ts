import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { channelKind } from '../../../src/channels/registry.ts';
import { TikTokProvider } from '../../../src/channels/tiktok/tiktok.provider.ts';
import { receivedMessage, tiktokPerson, type TikTokPerson } from '../../helpers/fake-tiktok-api.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { settled } from '../sending/sending.fixtures.ts';
import { withTikTokChannel, type TikTokFixture } from './tiktok-helpers.ts';

let f: TikTokFixture;
beforeAll(async () => {
  f = await withTikTokChannel();
});
afterAll(() => f.close());
beforeEach(() => {
  f.fake.requests.length = 0;
  f.fake.refuseRefresh(false);
});

const send = (payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  f.t.app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers: { ...f.tenant.headers, ...headers },
    payload: { from: 'tiktok', channel_uuid: f.channel.id, type: 'text', ...payload },
  });

/** A person who wrote to the channel `hoursAgo` hours ago. */
async function wrote(hoursAgo = 0): Promise<TikTokPerson> {
  const person = tiktokPerson();
  const body = receivedMessage(
    f.fake.businessId,
    person,
    { type: 'text', text: { body: 'hello' } },
    Date.now() - hoursAgo * 3_600_000,
  );
  const res = await f.post(body);
  expect(res.statusCode, res.body).toBe(200);
  return person;
}

const storedConfig = async () =>
  (
    await f.t.database.db
      .selectFrom('channels')
      .select('provider_config')
      .where('id', '=', f.channel.id)
      .executeTakeFirstOrThrow()
  ).provider_config;

const patchChannel = (provider: Record<string, unknown>) =>
  f.t.app.inject({ method: 'PATCH', url: f.channelUrl, headers: adminHeaders, payload: { provider } });

/** The channel's access token expired a minute ago (as the operator may set it). */
async function expireToken() {
  const res = await patchChannel({ access_token_expires_at: new Date(Date.now() - 60_000).toISOString() });
  expect(res.statusCode, res.body).toBe(200);
}

describe('TikTok sends', () => {
  it('sends a text to the conversation within the window, once per Idempotency-Key', async () => {
    const person = await wrote();
    const key = `key-${person.id}`;
    const res = await send(
      { to: person.conversationId, content: { text: 'Your order shipped' } },
      { 'idempotency-key': key },
    );
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().message.uuid as string;
    const again = await send(
      { to: person.conversationId, content: { text: 'Your order shipped' } },
      { 'idempotency-key': key },
    );
    expect(again.json().message.uuid).toBe(id);
    const row = await settled(f.t, id);
    expect(row).toMatchObject({ status: 'SENT', channel: 'tiktok' });
    const calls = f.fake.sends();
    expect(calls).toHaveLength(1);
    expect(calls[0].headers['access-token']).toBe(f.fake.accessToken);
    expect(calls[0].body).toEqual({
      business_id: f.fake.businessId,
      recipient_type: 'CONVERSATION',
      recipient: person.conversationId,
      message_type: 'TEXT',
      text: { body: 'Your order shipped' },
    });
    expect(row.provider_message_id).toMatch(/^msg\./);
  });

  it('sends an image by uploading it first, and refuses other media with 400', async () => {
    const person = await wrote();
    const image = Buffer.from('\x89PNG image bytes');
    const url = f.fake.addFile(image, 'image/png');
    const res = await send({ to: person.conversationId, type: 'image', content: { url } });
    expect(res.statusCode, res.body).toBe(200);
    expect((await settled(f.t, res.json().message.uuid as string)).status).toBe('SENT');
    const [upload] = f.fake.uploads();
    expect(upload.headers['access-token']).toBe(f.fake.accessToken);
    expect(upload.body).toMatchObject({ business_id: f.fake.businessId, media_type: 'IMAGE' });
    const file = upload.body?.file as { bytes: Buffer; contentType: string };
    expect(file.bytes.equals(image)).toBe(true);
    expect(file.contentType).toBe('image/png');
    const [sent] = f.fake.sends();
    expect(sent.body).toMatchObject({ message_type: 'IMAGE', image: { media_id: expect.stringMatching(/^v0/) } });

    const document = await send({ to: person.conversationId, type: 'document', content: { url, filename: 'a.pdf' } });
    expect(document.statusCode).toBe(400);
    expect(f.fake.sends()).toHaveLength(1);
  });

  it('refuses free-form outside the 48-hour window, a text over 6 000 characters and a recipient that is no conversation id', async () => {
    const late = await send({ to: (await wrote(49)).conversationId, content: { text: 'too late' } });
    expect(late.statusCode).toBe(400);
    expect(late.json().error.code).toBe('window_closed');
    const person = await wrote(47);
    // TikTok's limit counts characters (6 000, emoji included); the API takes 4 096 UTF-16 units at most.
    const refusal = channelKind('tiktok')?.textRefusal;
    expect(refusal?.('\u{1F600}'.repeat(6000))).toBeNull();
    expect(refusal?.('\u{1F600}'.repeat(6001))).toContain('6001');
    const long = await send({ to: person.conversationId, content: { text: 'x'.repeat(4097) } });
    expect(long.statusCode).toBe(400);
    const notAnId = await send({ to: 'not a conversation', content: { text: 'x' } });
    expect(notAnId.statusCode).toBe(400);
    const fits = await send({ to: person.conversationId, content: { text: '\u{1F600}'.repeat(2048) } });
    expect(fits.statusCode, fits.body).toBe(200);
    expect((await settled(f.t, fits.json().message.uuid as string)).status).toBe('SENT');
  });

  it('retries a rate-limited send, and ends one TikTok refuses', async () => {
    const person = await wrote();
    f.fake.failNextSends(1, { code: 40100, message: 'Too many requests' });
    const limited = await send({ to: person.conversationId, content: { text: 'soon' } });
    const row = await settled(f.t, limited.json().message.uuid as string);
    expect(row.status).toBe('SENT');
    expect(f.fake.sends()).toHaveLength(2);
    f.fake.failNextSends(1, { code: 40002, message: 'recipient is invalid' });
    const refused = await send({ to: person.conversationId, content: { text: 'never' } });
    const failed = await settled(f.t, refused.json().message.uuid as string);
    expect(failed.status).toBe('ERROR');
    expect(failed.error).toContain('40002');
  });
});

describe('TikTok tokens', () => {
  it('renews an expired access token once before the sends, and stores the new tokens sealed', async () => {
    const person = await wrote();
    const before = { access: f.fake.accessToken, refresh: f.fake.refreshToken };
    await expireToken();
    // Sends accepted together wait for one renewal.
    const hold = f.fake.holdRefresh();
    const accepted = await Promise.all(
      [1, 2, 3].map((n) => send({ to: person.conversationId, content: { text: `after the renewal ${n}` } })),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    hold.release();
    for (const res of accepted) expect((await settled(f.t, res.json().message.uuid as string)).status).toBe('SENT');
    expect(f.fake.sends()).toHaveLength(3);
    const [refresh] = f.fake.refreshes();
    expect(f.fake.refreshes()).toHaveLength(1);
    expect(refresh.body).toEqual({
      client_id: f.fake.appId,
      client_secret: f.fake.appSecret,
      grant_type: 'refresh_token',
      refresh_token: before.refresh,
    });
    expect(f.fake.accessToken).not.toBe(before.access);
    expect(f.fake.sends().every((call) => call.headers['access-token'] === f.fake.accessToken)).toBe(true);
    // Stored sealed: neither token is in the row, and the expiry is a day on.
    const stored = await storedConfig();
    const text = JSON.stringify(stored);
    for (const secret of [f.fake.accessToken, f.fake.refreshToken, before.access, f.fake.appSecret])
      expect(text).not.toContain(secret);
    expect(stored.access_token).toMatch(/^sb1\./);
    expect(stored.refresh_token).toMatch(/^sb1\./);
    expect(Date.parse(stored.access_token_expires_at as string)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    // The operator API never shows them either.
    const shown = await f.t.app.inject({ method: 'GET', url: f.channelUrl, headers: adminHeaders });
    expect(shown.json().channel).toMatchObject({ needs_credentials: false, provider: { kind: 'tiktok' } });
    expect(shown.body).not.toContain(f.fake.accessToken);
    // The next send uses the stored token, with no renewal.
    const next = await send({ to: person.conversationId, content: { text: 'no renewal' } });
    expect((await settled(f.t, next.json().message.uuid as string)).status).toBe('SENT');
    expect(f.fake.refreshes()).toHaveLength(1);
  });

  it('renews once for concurrent calls, and an adapter with an older copy takes the stored tokens instead', async () => {
    const person = await wrote();
    const saved: Record<string, string>[] = [];
    let stored: Record<string, unknown> = {
      kind: 'tiktok',
      business_id: f.fake.businessId,
      app_id: f.fake.appId,
      app_secret: f.fake.appSecret,
      access_token: f.fake.accessToken,
      refresh_token: f.fake.refreshToken,
      access_token_expires_at: new Date(Date.now() + 60_000).toISOString(),
      api_base_url: f.fake.baseUrl,
    };
    const store = {
      current: async () => stored,
      save: async (changes: Record<string, string>) => {
        saved.push(changes);
        stored = { ...stored, ...changes };
      },
    };
    const config = stored as ConstructorParameters<typeof TikTokProvider>[0];
    const http = {};
    const provider = new TikTokProvider(config, http, store);
    const hold = f.fake.holdRefresh();
    const sends = Array.from({ length: 3 }, (_, i) =>
      provider.send({ to: person.conversationId, content: { kind: 'text', text: `at once ${i}` } }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    hold.release();
    const results = await Promise.all(sends);
    expect(new Set(results.map((r) => r.providerMessageId)).size).toBe(3);
    expect(f.fake.refreshes()).toHaveLength(1);
    expect(saved).toHaveLength(1);
    expect(f.fake.sends().every((s) => s.headers['access-token'] === f.fake.accessToken)).toBe(true);
    // An adapter built from the config before the renewal reads the stored tokens: no second renewal.
    const stale = new TikTokProvider(config, http, store);
    await stale.send({ to: person.conversationId, content: { kind: 'text', text: 'stale copy' } });
    expect(f.fake.refreshes()).toHaveLength(1);
    // The service's own copy of the tokens is out of date now: the operator gives the current ones back.
    const patched = await patchChannel({
      access_token: f.fake.accessToken,
      refresh_token: f.fake.refreshToken,
      access_token_expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(patched.statusCode, patched.body).toBe(200);
  });

  it('marks the channel as needing credentials when TikTok refuses the renewal or the token, until a PATCH', async () => {
    const person = await wrote();
    f.fake.refuseRefresh(true);
    await expireToken();
    const res = await send({ to: person.conversationId, content: { text: 'cannot renew' } });
    const row = await settled(f.t, res.json().message.uuid as string);
    expect(row.status).toBe('ERROR');
    expect(row.error).toContain('refresh_refused');
    expect(f.fake.sends()).toHaveLength(0);
    const shown = await f.t.app.inject({ method: 'GET', url: f.channelUrl, headers: adminHeaders });
    expect(shown.json().channel).toMatchObject({ needs_credentials: true });

    f.fake.refuseRefresh(false);
    const patched = await patchChannel({
      access_token: f.fake.accessToken,
      refresh_token: f.fake.refreshToken,
      access_token_expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(patched.json().channel).toMatchObject({ needs_credentials: false });
    expect(patched.body).not.toContain(f.fake.accessToken);

    // A token TikTok says is revoked (40105) marks it too.
    f.fake.failNextSends(1, { code: 40105, message: 'Access token is incorrect or has been revoked.' });
    const revoked = await send({ to: person.conversationId, content: { text: 'revoked' } });
    const failed = await settled(f.t, revoked.json().message.uuid as string);
    expect(failed.status).toBe('ERROR');
    expect(failed.error).toContain('40105');
    expect(
      (await f.t.app.inject({ method: 'GET', url: f.channelUrl, headers: adminHeaders })).json().channel,
    ).toMatchObject({
      needs_credentials: true,
    });
  });

  it('calls beforeSend once, right before the send, and writes nothing of it when beforeSend rejects', async () => {
    const person = await wrote();
    const config = {
      kind: 'tiktok' as const,
      business_id: f.fake.businessId,
      app_id: f.fake.appId,
      app_secret: f.fake.appSecret,
      access_token: f.fake.accessToken,
      refresh_token: f.fake.refreshToken,
      api_base_url: f.fake.baseUrl,
    };
    const provider = new TikTokProvider(config);
    const refused = provider.send({
      to: person.conversationId,
      content: { kind: 'text', text: 'not this one' },
      beforeSend: () => Promise.reject(new Error('not this one')),
    });
    await expect(refused).rejects.toThrow();
    expect(f.fake.sends()).toHaveLength(0);
    let calls = 0;
    const sent = await provider.send({
      to: person.conversationId,
      content: { kind: 'text', text: 'this one' },
      beforeSend: async () => {
        calls++;
        expect(f.fake.sends()).toHaveLength(0);
      },
    });
    expect(calls).toBe(1);
    expect(f.fake.sends()).toHaveLength(1);
    expect(sent.providerMessageId).toMatch(/^msg\./);
  });

  it("answers 400 to a provider config that is not TikTok's", async () => {
    const create = (provider: Record<string, unknown>) =>
      f.t.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${f.tenant.businessId}/channels`,
        headers: adminHeaders,
        payload: { type: 'tiktok', identifier: 'biz-2', provider },
      });
    const base = {
      kind: 'tiktok',
      business_id: 'biz-2',
      app_id: '1',
      app_secret: 's',
      access_token: 'a',
      refresh_token: 'r',
    };
    expect((await create({ ...base, extra: 1 })).statusCode).toBe(400);
    expect((await create({ ...base, access_token: 'has spaces' })).statusCode).toBe(400);
    expect((await create({ ...base, access_token_expires_at: 'tomorrow' })).statusCode).toBe(400);
    const { refresh_token: _, ...withoutRefresh } = base;
    expect((await create(withoutRefresh)).statusCode).toBe(400);
    expect((await create({ ...base, kind: 'messenger' })).statusCode).toBe(400);
  });
});
