import { request } from 'undici';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  type FakeGraphApi,
} from '../../test/helpers/fake-graph-api.ts';
import { incomingSms, twilioWebhook, type FakeTwilioApi } from '../../test/helpers/fake-twilio-api.ts';
import type { PlannedRequest } from './messaging-load.ts';
import { createChannel } from './messaging-setup.ts';
import { ADMIN_TOKEN } from './service.ts';

/** The service's PUBLIC_URL in the channel benchmarks: Twilio signs the address it posts to. */
export const BENCH_PUBLIC_URL = 'http://bench.test';

/** The vendors' fakes on loopback that the channels of a run point at. */
export interface ChannelFakes {
  graph: FakeGraphApi;
  twilio: FakeTwilioApi;
}

/**
 * One channel type under inbound load: a channel of it made through the operator API, and `count`
 * signed notifications as its vendor posts them, one inbound text each, from `senders` senders; the
 * message text carries `tag` and the index, which the webhook receiver reads back.
 */
export interface ChannelLoad {
  channel: string;
  setup(
    url: string,
    businessId: string,
    fakes: ChannelFakes,
  ): Promise<(tag: string, count: number, senders: number) => PlannedRequest[]>;
}

async function adminPost(url: string, path: string, body: unknown): Promise<Record<string, any>> {
  const res = await request(url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as Record<string, any>;
  if (res.statusCode !== 201) throw new Error(`POST ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

const whatsapp: ChannelLoad = {
  channel: 'whatsapp',
  async setup(url, businessId, { graph }) {
    const channel = await createChannel(url, businessId, graph, 1);
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => {
        const from = String(5491100000000 + (i % senders));
        const message = inboundMessage(from, 'text', { body: `${tag} ${i}` });
        const body = metaNotification({
          phoneNumberId: channel.phoneNumberId,
          displayPhoneNumber: channel.identifier,
          contacts: [{ waId: from, name: `Sender ${i % senders}` }],
          messages: [message],
        });
        const { payload, headers } = signedNotification(body, channel.appSecret);
        return {
          id: message.id as string,
          method: 'POST' as const,
          path: '/channels/whatsapp/webhook',
          headers,
          body: payload,
        };
      });
  },
};

const sms: ChannelLoad = {
  channel: 'sms',
  async setup(url, businessId, { twilio }) {
    const number = '+14155550100';
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'sms',
      identifier: number,
      provider: {
        kind: 'twilio',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        from_number: number,
        api_base_url: twilio.baseUrl,
      },
    });
    const path = '/channels/twilio/webhook';
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => {
        const params = incomingSms({
          accountSid: twilio.accountSid,
          from: `+1628${String(5_000_000 + (i % senders))}`,
          to: number,
          body: `${tag} ${i}`,
        });
        const { payload, headers } = twilioWebhook(`${BENCH_PUBLIC_URL}${path}`, params, twilio.authToken);
        return { id: params.MessageSid, method: 'POST' as const, path, headers, body: payload };
      });
  },
};

/** Every channel type the benchmark drives, in the order of its table. */
export const channelLoads: readonly ChannelLoad[] = [whatsapp, sms];
