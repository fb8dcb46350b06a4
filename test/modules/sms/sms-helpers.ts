import { randomInt } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { startFakeTwilioApi, twilioWebhook, type FakeTwilioApi } from '../../helpers/fake-twilio-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';

export const SMS_WEBHOOK = '/channels/twilio/webhook';

/** A US number nobody else in the test run uses, in E.164. */
export const newNumber = () => `+1415${String(randomInt(2_000_000, 9_999_999))}`;

export interface SmsChannel {
  id: string;
  number: string;
}

/** An SMS channel of the business on the fake Twilio API, made through the operator API. */
export async function createSmsChannel(
  app: FastifyInstance,
  businessId: string,
  twilio: FakeTwilioApi,
  extra: Record<string, unknown> = {},
): Promise<SmsChannel> {
  const number = newNumber();
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'sms',
      identifier: number,
      provider: {
        kind: 'twilio',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        from_number: number,
        api_base_url: twilio.baseUrl,
        ...extra,
      },
    },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id as string, number };
}

export interface SmsFixture {
  t: TestApp;
  twilio: FakeTwilioApi;
  tenant: Tenant;
  channel: SmsChannel;
  /** Posts form parameters to the webhook, signed as Twilio signs them for the account. */
  post(params: Record<string, string>, authToken?: string): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** A test app that may reach the fake Twilio API (loopback), a business and its SMS channel. */
export async function withSmsChannel(options: { workers?: boolean } = {}): Promise<SmsFixture> {
  const twilio = await startFakeTwilioApi();
  const t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }, { workers: options.workers });
  const tenant = await createTenant(t.app);
  const channel = await createSmsChannel(t.app, tenant.businessId, twilio);
  return {
    t,
    twilio,
    tenant,
    channel,
    post: (params, authToken = twilio.authToken) =>
      t.app.inject({
        method: 'POST',
        url: SMS_WEBHOOK,
        ...twilioWebhook(`${PUBLIC_URL}${SMS_WEBHOOK}`, params, authToken),
      }),
    close: async () => {
      await t.close();
      await twilio.close();
    },
  };
}
