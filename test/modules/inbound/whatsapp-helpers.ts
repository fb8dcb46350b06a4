import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { metaNotification, signedNotification, type NotificationParts } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import type { LiveOptions } from '../../../src/modules/live/live.hub.ts';

export const WEBHOOK = '/channels/whatsapp/webhook';

/** A WhatsApp channel made through the operator API, with its secrets. */
export interface TestChannel {
  id: string;
  businessId: string;
  identifier: string;
  phoneNumberId: string;
  appSecret: string;
  verifyToken: string;
}

/** What a test may choose of a channel; the rest is fresh. */
export interface ChannelOptions {
  identifier?: string;
  apiBaseUrl?: string;
  accessToken?: string;
  phoneNumberId?: string;
  appSecret?: string;
}

/** Creates a whatsapp_cloud channel with fresh secrets and a unique phone_number_id. */
export async function createWhatsAppChannel(
  app: FastifyInstance,
  businessId: string,
  options: ChannelOptions = {},
): Promise<TestChannel> {
  const phoneNumberId =
    options.phoneNumberId ?? String(100_000_000_000_000n + BigInt(`0x${randomBytes(5).toString('hex')}`));
  const appSecret = options.appSecret ?? randomBytes(16).toString('hex');
  const verifyToken = `verify-${randomBytes(8).toString('hex')}`;
  const identifier = options.identifier ?? `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'whatsapp',
      identifier,
      provider: {
        kind: 'whatsapp_cloud',
        phone_number_id: phoneNumberId,
        access_token: options.accessToken ?? `EAAG${randomBytes(8).toString('hex')}`,
        app_secret: appSecret,
        verify_token: verifyToken,
        ...(options.apiBaseUrl ? { api_base_url: options.apiBaseUrl } : {}),
      },
    },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id, businessId, identifier, phoneNumberId, appSecret, verifyToken };
}

/** Posts a notification body signed with `secret` (the channel's app secret unless given), as Meta does. */
export function postSigned(app: FastifyInstance, body: unknown, secret: string) {
  const { payload, headers } = signedNotification(body, secret);
  return app.inject({ method: 'POST', url: WEBHOOK, headers, payload });
}

/** One `messages` change for the channel. */
export function notificationFor(channel: TestChannel, parts: Omit<NotificationParts, 'phoneNumberId'>) {
  return metaNotification({ phoneNumberId: channel.phoneNumberId, displayPhoneNumber: channel.identifier, ...parts });
}

/** A test app with a business and its WhatsApp channel, and posts signed as Meta signs that channel's. */
export interface WhatsAppFixture {
  t: TestApp;
  tenant: Tenant;
  channel: TestChannel;
  /** Posts a body signed with the channel's app secret. */
  post(body: unknown): ReturnType<typeof postSigned>;
  /** Posts one `messages` change for the channel (notificationFor), signed with its app secret. */
  notify(parts: Omit<NotificationParts, 'phoneNumberId'>): ReturnType<typeof postSigned>;
}

/**
 * The set-up of the inbound tests: a test app (with `env`; `workers: false` leaves its workers
 * stopped), a business and its WhatsApp channel. The caller closes `t`.
 */
export async function withWhatsAppChannel(
  options: { env?: Record<string, string>; workers?: boolean; channel?: ChannelOptions; live?: LiveOptions } = {},
): Promise<WhatsAppFixture> {
  const t = await buildTestApp(options.env, { workers: options.workers, live: options.live });
  try {
    const tenant = await createTenant(t.app);
    const channel = await createWhatsAppChannel(t.app, tenant.businessId, options.channel);
    return {
      t,
      tenant,
      channel,
      post: (body) => postSigned(t.app, body, channel.appSecret),
      notify: (parts) => postSigned(t.app, notificationFor(channel, parts), channel.appSecret),
    };
  } catch (err) {
    await t.close();
    throw err;
  }
}
