import type { LightMyRequestResponse } from 'fastify';
import { randomBytes } from 'node:crypto';
import {
  metaId,
  signedBody,
  startFakeMetaMessagingApi,
  type FakeMetaMessagingApi,
} from '../../helpers/fake-meta-messaging-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

/** A Messenger or Instagram channel of the business, with the secrets the test signs with. */
export interface MetaChannel {
  id: string;
  kind: 'messenger' | 'instagram';
  account: string;
  appSecret: string;
  verifyToken: string;
}

export interface MetaFixture {
  t: TestApp;
  fake: FakeMetaMessagingApi;
  tenant: Tenant;
  messenger: MetaChannel;
  instagram: MetaChannel;
  /** Posts a notification to the channel kind's webhook, signed with `appSecret` (the channel's by default). */
  post(channel: MetaChannel, body: unknown, appSecret?: string): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** A Messenger or Instagram channel made through the operator API, on the fake. */
export async function createMetaChannel(
  t: TestApp,
  businessId: string,
  fake: FakeMetaMessagingApi,
  kind: 'messenger' | 'instagram',
): Promise<MetaChannel> {
  const account = metaId();
  const appSecret = randomBytes(16).toString('hex');
  const verifyToken = randomBytes(12).toString('hex');
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: kind,
      identifier: account,
      provider: {
        kind,
        [kind === 'messenger' ? 'page_id' : 'account_id']: account,
        access_token: fake.accessToken,
        app_secret: appSecret,
        verify_token: verifyToken,
        api_base_url: fake.baseUrl,
      },
    },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id as string, kind, account, appSecret, verifyToken };
}

/** A test app that may reach the fake (loopback), with workers, a business and one channel of each kind. */
export async function withMetaChannels(): Promise<MetaFixture> {
  const fake = await startFakeMetaMessagingApi();
  const t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: true });
  const tenant = await createTenant(t.app);
  const messenger = await createMetaChannel(t, tenant.businessId, fake, 'messenger');
  const instagram = await createMetaChannel(t, tenant.businessId, fake, 'instagram');
  return {
    t,
    fake,
    tenant,
    messenger,
    instagram,
    post: (channel, body, appSecret = channel.appSecret) =>
      t.app.inject({ method: 'POST', url: `/channels/${channel.kind}/webhook`, ...signedBody(body, appSecret) }),
    close: async () => {
      await t.close();
      await fake.close();
    },
  };
}
