import type { LightMyRequestResponse } from 'fastify';
import { randomBytes } from 'node:crypto';
import { signedEvent, startFakeTikTokApi, type FakeTikTokApi } from '../../helpers/fake-tiktok-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

/** A TikTok channel of a business, with the secret the test signs its events with. */
export interface TikTokChannel {
  id: string;
  businessId: string;
  appSecret: string;
}

export interface TikTokFixture {
  t: TestApp;
  fake: FakeTikTokApi;
  tenant: Tenant;
  channel: TikTokChannel;
  /** Posts an event to the webhook, signed with `appSecret` (the channel's by default) at `t` (now by default). */
  post(body: unknown, appSecret?: string, t?: number): Promise<LightMyRequestResponse>;
  /** The channel through the operator API. */
  channelUrl: string;
  close(): Promise<void>;
}

/** A TikTok channel made through the operator API: the fake's business account, or another one's. */
export async function createTikTokChannel(
  t: TestApp,
  businessId: string,
  fake: FakeTikTokApi,
  provider: Record<string, unknown> = {},
): Promise<TikTokChannel> {
  const config = {
    kind: 'tiktok',
    business_id: fake.businessId,
    app_id: fake.appId,
    app_secret: fake.appSecret,
    access_token: fake.accessToken,
    refresh_token: fake.refreshToken,
    access_token_expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    api_base_url: fake.baseUrl,
    ...provider,
  };
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: { type: 'tiktok', identifier: config.business_id, provider: config },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id as string, businessId: config.business_id, appSecret: config.app_secret };
}

/** Another business account's channel (its own id and app secret), on the same fake. */
export const otherAccount = () => ({
  business_id: `-000${randomBytes(16).toString('hex')}`,
  app_secret: 'their-secret',
});

/** A test app that may reach the fake (loopback), with workers, a business and its TikTok channel. */
export async function withTikTokChannel(): Promise<TikTokFixture> {
  const fake = await startFakeTikTokApi();
  const t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: true });
  const tenant = await createTenant(t.app);
  const channel = await createTikTokChannel(t, tenant.businessId, fake);
  return {
    t,
    fake,
    tenant,
    channel,
    channelUrl: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
    post: (body, appSecret = channel.appSecret, at) =>
      t.app.inject({ method: 'POST', url: '/channels/tiktok/webhook', ...signedEvent(body, appSecret, at) }),
    close: async () => {
      await t.close();
      await fake.close();
    },
  };
}
