import pg from 'pg';
import { request } from 'undici';
import type { FakeGraphApi } from '../../test/helpers/fake-graph-api.ts';
import { inboundMessage, metaNotification, signedNotification } from '../../test/helpers/fake-graph-api.ts';
import type { PlannedRequest } from './messaging-load.ts';
import { ADMIN_TOKEN } from './service.ts';

/** A WhatsApp channel of the bench business, pointed at the fake Graph API. */
export interface BenchChannel {
  id: string;
  phoneNumberId: string;
  identifier: string;
  appSecret: string;
}

async function admin<T>(
  url: string,
  method: 'POST' | 'PATCH',
  path: string,
  body: unknown,
  expect: number,
): Promise<T> {
  const res = await request(url + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as T;
  if (res.statusCode !== expect) throw new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

/** Creates a WhatsApp Cloud channel through the operator API (pace omitted = the default, 80/s). */
export async function createChannel(
  url: string,
  businessId: string,
  fake: FakeGraphApi,
  n: number,
  pace?: number,
): Promise<BenchChannel> {
  const phoneNumberId = String(106540352242900 + n);
  const identifier = String(15550783880 + n);
  const appSecret = `bench-app-secret-${n}-0123456789abcdef`;
  const { channel } = await admin<{ channel: { id: string } }>(
    url,
    'POST',
    `/admin/v1/businesses/${businessId}/channels`,
    {
      type: 'whatsapp',
      identifier,
      provider: {
        kind: 'whatsapp_cloud',
        phone_number_id: phoneNumberId,
        access_token: fake.accessToken,
        app_secret: appSecret,
        verify_token: `verify-${n}`,
        api_base_url: fake.baseUrl,
      },
      ...(pace !== undefined ? { pace_per_second: pace } : {}),
    },
    201,
  );
  return { id: channel.id, phoneNumberId, identifier, appSecret };
}

/** Changes a channel's pace through the operator API. */
export async function setPace(url: string, businessId: string, channelId: string, pace: number): Promise<void> {
  await admin(url, 'PATCH', `/admin/v1/businesses/${businessId}/channels/${channelId}`, { pace_per_second: pace }, 200);
}

/** One signed inbound notification (one text message) per planned request, as Meta posts them. */
export function inboundRequests(channel: BenchChannel, senders: string[]): (PlannedRequest & { from: string })[] {
  return senders.map((from, i) => {
    const message = inboundMessage(from, 'text', { body: `bench message ${i} from ${from}` });
    const body = metaNotification({
      phoneNumberId: channel.phoneNumberId,
      displayPhoneNumber: channel.identifier,
      contacts: [{ waId: from, name: `Sender ${from.slice(-4)}` }],
      messages: [message],
    });
    const { payload, headers } = signedNotification(body, channel.appSecret);
    return {
      id: message.id as string,
      from,
      method: 'POST' as const,
      path: '/channels/whatsapp/webhook',
      headers,
      body: payload,
    };
  });
}

/** One free-form text send per recipient (POST /external/v2/messages/send). */
export function sendRequests(
  channel: BenchChannel,
  apiKey: string,
  recipients: string[],
  tag: string,
): PlannedRequest[] {
  return recipients.map((to, i) => ({
    id: `${tag}-${i}`,
    method: 'POST',
    path: '/external/v2/messages/send',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({
      channel_uuid: channel.id,
      from: 'whatsapp',
      to,
      type: 'text',
      content: { text: `bench send ${tag} ${i}` },
    }),
  }));
}

/** Arrival time (performance.now()) and path of every request the fake Graph API receives. */
export function recordArrivals(fake: FakeGraphApi): { t: number; path: string }[] {
  const arrivals: { t: number; path: string }[] = [];
  const requests = fake.requests;
  const push = requests.push.bind(requests);
  requests.push = (...items) => {
    for (const item of items) arrivals.push({ t: performance.now(), path: item.path });
    return push(...items);
  };
  return arrivals;
}

/** What the database holds for the bench business after an inbound run. */
export interface StoredInbound {
  messages: number;
  /** accepted provider ids missing from the table, and stored ids that were not accepted. */
  missing: number;
  unexpected: number;
  duplicates: number;
  contacts: number;
  conversations: number;
  messageCountSum: number;
}

/** Compares the inbound messages stored with the provider message ids the webhook accepted. */
export async function checkInbound(
  databaseUrl: string,
  businessId: string,
  channelId: string,
  accepted: string[],
): Promise<StoredInbound> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const ids = await client.query<{ provider_message_id: string }>(
      `select provider_message_id from messages where business_id = $1 and channel_id = $2 and direction = 'inbound'`,
      [businessId, channelId],
    );
    const stored = new Set<string>();
    let duplicates = 0;
    for (const row of ids.rows) {
      if (stored.has(row.provider_message_id)) duplicates++;
      stored.add(row.provider_message_id);
    }
    const acceptedSet = new Set(accepted);
    let missing = 0;
    for (const id of acceptedSet) if (!stored.has(id)) missing++;
    let unexpected = 0;
    for (const id of stored) if (!acceptedSet.has(id)) unexpected++;
    const counts = await client.query<{ contacts: string; conversations: string; sum: string | null }>(
      `select (select count(*) from contacts where business_id = $1) as contacts,
              (select count(*) from conversations where business_id = $1) as conversations,
              (select sum(message_count) from conversations where business_id = $1) as sum`,
      [businessId],
    );
    const c = counts.rows[0];
    return {
      messages: ids.rows.length,
      missing,
      unexpected,
      duplicates,
      contacts: Number(c.contacts),
      conversations: Number(c.conversations),
      messageCountSum: Number(c.sum ?? 0),
    };
  } finally {
    await client.end();
  }
}

/** Outbound messages of a channel by status. */
export async function outboundStatuses(
  databaseUrl: string,
  businessId: string,
  channelId: string,
): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const res = await client.query<{ status: string; n: string }>(
      `select status, count(*) as n from messages where business_id = $1 and channel_id = $2 and direction = 'outbound' group by status`,
      [businessId, channelId],
    );
    return Object.fromEntries(res.rows.map((r) => [r.status, Number(r.n)]));
  } finally {
    await client.end();
  }
}

/** Runs one statement on the bench database. */
export async function runSql(databaseUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
