import type { UserFacingSocketConfig, WAMessage } from 'baileys';
import type { FastifyInstance } from 'fastify';
import { ImapFlow } from 'imapflow';
import { randomBytes, randomUUID } from 'node:crypto';
import { Pool, request } from 'undici';
import { whatsAppWebTransport } from '../../src/channels/whatsapp-web/whatsapp-web.socket.ts';
import { FakeSocket } from '../../test/helpers/fake-baileys-socket.ts';
import type { TestDovecot } from '../../test/helpers/dovecot.ts';
import {
  outgoingMessageEvent,
  signedHubSpotWebhook,
  type FakeHubSpotApi,
} from '../../test/helpers/fake-hubspot-api.ts';
import {
  messageEvent,
  messagingNotification,
  signedBody,
  type FakeMetaMessagingApi,
} from '../../test/helpers/fake-meta-messaging-api.ts';
import type { SmtpSink } from '../../test/helpers/smtp-sink.ts';
import { receivedMessage, signedEvent, type FakeTikTokApi } from '../../test/helpers/fake-tiktok-api.ts';
import type { BenchReceiver } from '../webhooks-receiver.ts';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  type FakeGraphApi,
} from '../../test/helpers/fake-graph-api.ts';
import { incomingCall, incomingSms, twilioWebhook, type FakeTwilioApi } from '../../test/helpers/fake-twilio-api.ts';
import type { PlannedRequest } from './messaging-load.ts';
import { createChannel } from './messaging-setup.ts';
import { ADMIN_TOKEN } from './service.ts';

/** The service's PUBLIC_URL in the channel benchmarks: Twilio signs the address it posts to. */
export const BENCH_PUBLIC_URL = 'http://bench.test';

/** The vendors' fakes on loopback that the channels of a run point at. */
export interface ChannelFakes {
  graph: FakeGraphApi;
  twilio: FakeTwilioApi;
  meta: FakeMetaMessagingApi;
  tiktok: FakeTikTokApi;
  hubspot: FakeHubSpotApi;
  /** The IMAP server email channels read, and the SMTP server they would send through. */
  dovecot: TestDovecot;
  smtp: SmtpSink;
  /** The business's webhook endpoint, whose receipts tell what the service stored. */
  receiver: BenchReceiver;
  /** The service's app, when it runs in the benchmark's own process (loads that say `inProcess`). */
  app?: FastifyInstance;
}

/**
 * One inbound notification reaching the service: a signed webhook posted over the run's connections,
 * or a mail put into a mailbox; resolves to the HTTP status (200 for a mail the IMAP server stored).
 */
export type Delivery = (pool: Pool) => Promise<number>;

/** Deliveries of `count` inbound texts from `senders` senders, each text `${tag} ${index}`. */
export type Deliveries = (tag: string, count: number, senders: number) => Delivery[];

/**
 * One channel type under inbound load: a channel of it made through the operator API, and its
 * deliveries as its vendor makes them; each text carries the tag and index the webhook receiver reads back.
 */
export interface ChannelLoad {
  channel: string;
  setup(url: string, businessId: string, fakes: ChannelFakes): Promise<Deliveries>;
  /**
   * How many distinct texts tagged `tag` have landed where the load ends; by default the
   * `message_created` webhooks the business's receiver holds.
   */
  landed?(fakes: ChannelFakes, tag: string): number;
  /** The service must run in this process: the load replaces a vendor library's object there. */
  inProcess?: boolean;
}

/** How many distinct texts among `texts` start with `${tag} `. */
export const countTagged = (texts: Iterable<string | null | undefined>, tag: string) => {
  const seen = new Set<string>();
  for (const text of texts) if (text?.startsWith(`${tag} `)) seen.add(text);
  return seen.size;
};

/** Polls `check` every 20 ms until it holds; throws after `timeoutMs`. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A planned request as a delivery over the run's connections. */
const posted =
  (r: PlannedRequest): Delivery =>
  async (pool) => {
    const res = await pool.request({ method: r.method, path: r.path, headers: r.headers, body: r.body });
    await res.body.text();
    return res.statusCode;
  };

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
        return posted({
          id: message.id as string,
          method: 'POST',
          path: '/channels/whatsapp/webhook',
          headers,
          body: payload,
        });
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
        return posted({ id: params.MessageSid, method: 'POST', path, headers, body: payload });
      });
  },
};

/**
 * Phone calls to a Twilio Voice number (record mode): each an incoming call as Twilio posts it, answered
 * with TwiML. A call has no text when it comes in: its CallSid carries the tag and index instead,
 * which the receiver reads from the message's metadata.call_sid.
 */
const voice: ChannelLoad = {
  channel: 'voice',
  async setup(url, businessId, { twilio }) {
    const number = '+14155550200';
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'voice',
      identifier: number,
      provider: {
        kind: 'twilio_voice',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        phone_number: number,
        mode: 'record',
        api_base_url: twilio.baseUrl,
      },
    });
    const path = '/channels/twilio_voice/webhook';
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => {
        const params = incomingCall({
          accountSid: twilio.accountSid,
          from: `+1628${String(6_000_000 + (i % senders))}`,
          to: number,
          sid: `${tag} ${i}`,
        });
        const { payload, headers } = twilioWebhook(`${BENCH_PUBLIC_URL}${path}`, params, twilio.authToken);
        return posted({ id: params.CallSid, method: 'POST', path, headers, body: payload });
      });
  },
};

/** Messenger or Instagram: one page or account, texts from page- or Instagram-scoped ids, as Meta posts them. */
const metaMessaging = (kind: 'messenger' | 'instagram'): ChannelLoad => ({
  channel: kind,
  async setup(url, businessId, { meta }) {
    const account = kind === 'messenger' ? '104250000000001' : '178410000000001';
    const appSecret = `bench-${kind}-app-secret-0123456789`;
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: kind,
      identifier: account,
      provider: {
        kind,
        [kind === 'messenger' ? 'page_id' : 'account_id']: account,
        access_token: meta.accessToken,
        app_secret: appSecret,
        verify_token: `bench-${kind}-verify`,
        api_base_url: meta.baseUrl,
      },
    });
    const path = `/channels/${kind}/webhook`;
    const object = kind === 'messenger' ? 'page' : 'instagram';
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => {
        const person = String(7310000000000000 + (i % senders));
        const event = messageEvent(person, account, { text: `${tag} ${i}` });
        const { payload, headers } = signedBody(messagingNotification(object, account, [event]), appSecret);
        return posted({ id: `${tag}-${i}`, method: 'POST', path, headers, body: payload });
      });
  },
});

/** TikTok: the fake's business account, texts from conversations as TikTok posts them (one event a request). */
const tiktok: ChannelLoad = {
  channel: 'tiktok',
  async setup(url, businessId, { tiktok: fake }) {
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'tiktok',
      identifier: fake.businessId,
      provider: {
        kind: 'tiktok',
        business_id: fake.businessId,
        app_id: fake.appId,
        app_secret: fake.appSecret,
        access_token: fake.accessToken,
        refresh_token: fake.refreshToken,
        api_base_url: fake.baseUrl,
      },
    });
    const path = '/channels/tiktok/webhook';
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => {
        const n = i % senders;
        const person = { id: `-000bench${n}`, username: `bench_${n}`, conversationId: `0:1:7310000:${n}` };
        const event = receivedMessage(fake.businessId, person, { type: 'text', text: { body: `${tag} ${i}` } });
        // Signed when delivered: TikTok's signature carries its time, refused 5 minutes on.
        return (pool) => {
          const { payload, headers } = signedEvent(event, fake.appSecret);
          return posted({ id: `${tag}-${i}`, method: 'POST', path, headers, body: payload })(pool);
        };
      });
  },
};

/** IMAP connections that put the run's mails into the mailbox. */
const APPEND_CONNECTIONS = 8;

/** The bench mailbox's user on the test Dovecot, and its password for IMAP and SMTP. */
export const BENCH_MAILBOX = { user: 'desk@bench.example', password: 'bench-imap-password' };

const email: ChannelLoad = {
  channel: 'email',
  async setup(url, businessId, { dovecot, smtp, receiver }) {
    const address = BENCH_MAILBOX.user;
    const login = { user: address, password: BENCH_MAILBOX.password };
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'email',
      identifier: address,
      provider: {
        kind: 'email',
        address,
        smtp: { host: '127.0.0.1', port: smtp.port, secure: false, ...login },
        imap: { host: dovecot.host, port: dovecot.port, secure: false, ...login },
      },
    });
    // Several IMAP connections put the mails in (imapflow runs one command at a time per connection):
    // senders' servers delivering to the mailbox side by side, so the IMAP server's appends are not
    // what the run measures.
    const clients = await Promise.all(
      Array.from({ length: APPEND_CONNECTIONS }, async () => {
        const client = new ImapFlow({
          host: dovecot.host,
          port: dovecot.port,
          secure: false,
          auth: { user: login.user, pass: login.password },
          logger: false,
        });
        // An idle connection times out between two runs; the next append opens it again.
        client.on('error', () => undefined);
        await client.connect();
        return client;
      }),
    );
    let turn = 0;
    const append = async (raw: string) => ((await clients[turn++ % clients.length].append('INBOX', raw)) ? 200 : 500);
    // The channel reads the mail that arrives once its reader has started: mails go in until one of them is stored.
    for (let n = 0; !receiver.receipts.some((r) => r.text?.startsWith('probe ')); n++) {
      if (n === 200) throw new Error('the email channel stored none of 200 mails');
      await append(mailOf(address, 'probe', n, 1));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => () => append(mailOf(address, tag, i, senders)));
  },
};

/** A plain mail to `to` whose text is `${tag} ${i}`, from one of `senders` people. */
function mailOf(to: string, tag: string, i: number, senders: number): string {
  return [
    `From: Sender ${i % senders} <sender${i % senders}@people.example>`,
    `To: ${to}`,
    `Subject: Order ${i}`,
    `Message-ID: <${tag}-${i}-${Date.now()}@people.example>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `${tag} ${i}`,
    '',
  ].join('\r\n');
}

/** The site the bench's widget is embedded on. */
const BENCH_SITE = 'https://shop.bench.test';

/**
 * A visitor's address: each visitor writes from its own, as visitors of a site do (the service
 * trusts the bench's X-Forwarded-For).
 */
const visitorIp = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

/**
 * The website widget: one widget, a session per visitor opened first, then texts written through
 * the widget's route, each visitor from its own address so the per-address limits see a site's traffic.
 */
const webEmbed: ChannelLoad = {
  channel: 'web_embed',
  async setup(url, businessId) {
    const widgetId = 'bench_widget';
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'web_embed',
      identifier: widgetId,
      provider: { kind: 'web_embed', widget_id: widgetId, allowed_origins: [BENCH_SITE] },
    });
    const base = `/widget/v1/${widgetId}`;
    const tokens: string[] = [];
    const tokenOf = async (n: number) => {
      if (tokens[n]) return tokens[n];
      const res = await request(`${url}${base}/sessions`, {
        method: 'POST',
        headers: { origin: BENCH_SITE, 'content-type': 'application/json', 'x-forwarded-for': visitorIp(n) },
        body: '{}',
      });
      const body = (await res.body.json()) as { token?: string };
      if (res.statusCode !== 200 || !body.token) throw new Error(`widget session: ${res.statusCode}`);
      return (tokens[n] = body.token);
    };
    return (tag, count, senders) => {
      // Every visitor's session opens in the warm-up: what the run times is the visitors' writing.
      const ready = Promise.all(Array.from({ length: senders }, (_, n) => tokenOf(n)));
      return Array.from({ length: count }, (_, i) => async (pool: Pool) => {
        const n = i % senders;
        const token = tokens[n] ?? (await ready)[n];
        const res = await pool.request({
          method: 'POST',
          path: `${base}/messages`,
          headers: {
            origin: BENCH_SITE,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'x-forwarded-for': visitorIp(n),
          },
          body: JSON.stringify({ client_id: randomUUID(), text: `${tag} ${i}` }),
        });
        await res.body.text();
        return res.statusCode;
      });
    };
  },
};

/** Messages of a WhatsApp Web `messages.upsert`: Baileys hands over what arrived together in one event. */
const UPSERT_SIZE = 10;

/**
 * A customer's text to a linked WhatsApp Web number as Baileys emits it: a plain `conversation`,
 * or every third one an `extendedTextMessage` (a text with a link preview or a reply's context).
 */
function whatsAppWebText(from: string, name: string, text: string, i: number): WAMessage {
  return {
    key: {
      remoteJid: `${from}@s.whatsapp.net`,
      fromMe: false,
      id: `3EB0${randomBytes(8).toString('hex').toUpperCase()}`,
    },
    messageTimestamp: Math.floor(Date.now() / 1000),
    pushName: name,
    message: i % 3 === 2 ? { extendedTextMessage: { text } } : { conversation: text },
  };
}

/**
 * WhatsApp Web: a number linked through a socket whose `ev` is Baileys' own event buffer (the
 * vendor's connection is the one part replaced), then texts from many senders emitted as
 * `messages.upsert` events, each of UPSERT_SIZE messages, all at once as a busy phone's traffic
 * arrives. The service runs in this process so that its socket factory is the bench's.
 */
const whatsappWeb: ChannelLoad = {
  channel: 'whatsapp_web',
  inProcess: true,
  async setup(url, businessId, { app }) {
    if (!app) throw new Error('whatsapp_web needs the service in this process');
    const sockets: FakeSocket[] = [];
    whatsAppWebTransport.makeSocket = (config: UserFacingSocketConfig) => {
      const socket = new FakeSocket(config.auth);
      sockets.push(socket);
      return socket;
    };
    const number = '15550009999';
    const { channel } = await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'whatsapp_web',
      identifier: `+${number}`,
      provider: { kind: 'whatsapp_web', phone_number: number },
    });
    const links = app.services.channelLinks;
    await links.request(businessId, channel.id as string);
    await until(() => sockets.length > 0, 'the WhatsApp Web link to connect');
    sockets[0].link(number);
    await until(async () => (await links.view(businessId, channel.id as string)).state === 'linked', 'the link');
    const socket = sockets[0];
    return (tag, count, senders) =>
      Array.from({ length: Math.ceil(count / UPSERT_SIZE) }, (_, b) => async () => {
        const messages = Array.from({ length: Math.min(UPSERT_SIZE, count - b * UPSERT_SIZE) }, (_, k) => {
          const i = b * UPSERT_SIZE + k;
          return whatsAppWebText(String(5491100000000 + (i % senders)), `Sender ${i % senders}`, `${tag} ${i}`, i);
        });
        socket.ev.emit('messages.upsert', { messages, type: 'notify' });
        return 200;
      });
  },
};

/** The business's HubSpot inbox and the SMS number whose conversations it mirrors, made once per business. */
interface HubSpotInbox {
  channelId: string;
  accountId: string;
  clientSecret: string;
  /** A customer's SMS to the mirrored number, as Twilio posts it. */
  customerWrites(text: string, sender: number): Delivery;
}

const hubspotInboxes = new Map<string, Promise<HubSpotInbox>>();

/**
 * A HubSpot inbox mirroring SMS, and an SMS number of its own paced at the most a channel takes
 * (1 000/s), so that what a relayed reply's run measures is the service rather than the pace.
 * Made after the other channels' runs (the HubSpot loads come last), so nothing else is mirrored.
 */
function hubspotInbox(url: string, businessId: string, { hubspot, twilio }: ChannelFakes): Promise<HubSpotInbox> {
  const made = hubspotInboxes.get(businessId);
  if (made) return made;
  const making = (async () => {
    const number = '+14155550300';
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'sms',
      identifier: number,
      pace_per_second: 1000,
      provider: {
        kind: 'twilio',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        from_number: number,
        api_base_url: twilio.baseUrl,
      },
    });
    const inbox = { channelId: '4242', accountId: '91001', clientSecret: 'bench-hubspot-client-secret-0123456789' };
    await adminPost(url, `/admin/v1/businesses/${businessId}/channels`, {
      type: 'hubspot_chat',
      identifier: inbox.accountId,
      provider: {
        kind: 'hubspot',
        channel_id: inbox.channelId,
        channel_account_id: inbox.accountId,
        access_token: hubspot.accessToken,
        client_secret: inbox.clientSecret,
        api_base_url: hubspot.baseUrl,
        mirror_channel_types: ['sms'],
      },
    });
    const path = '/channels/twilio/webhook';
    const customerWrites = (text: string, sender: number) => {
      const params = incomingSms({
        accountSid: twilio.accountSid,
        from: `+1629${String(5_000_000 + sender)}`,
        to: number,
        body: text,
      });
      const { payload, headers } = twilioWebhook(`${BENCH_PUBLIC_URL}${path}`, params, twilio.authToken);
      return posted({ id: params.MessageSid, method: 'POST', path, headers, body: payload });
    };
    return { ...inbox, customerWrites };
  })();
  hubspotInboxes.set(businessId, making);
  return making;
}

/** The texts the fake HubSpot holds (one per message mirrored). */
const mirroredTexts = (hubspot: FakeHubSpotApi) => hubspot.messages().map((m) => m.text);

/**
 * HubSpot, what goes to it: customers' SMS texts, each copied into the HubSpot inbox (an INCOMING
 * publish to the fake HubSpot API). The run ends when HubSpot holds every one of them.
 */
const hubspotMirrored: ChannelLoad = {
  channel: 'hubspot_mirrored',
  async setup(url, businessId, fakes) {
    const inbox = await hubspotInbox(url, businessId, fakes);
    return (tag, count, senders) =>
      Array.from({ length: count }, (_, i) => inbox.customerWrites(`${tag} ${i}`, i % senders));
  },
  landed: ({ hubspot }, tag) => countTagged(mirroredTexts(hubspot), tag),
};

/**
 * HubSpot, what comes from it: replies written in the HubSpot inbox (OUTGOING_CHANNEL_MESSAGE_CREATED,
 * signed X-HubSpot-Signature-v3) on the threads of `senders` SMS conversations opened first, each
 * sent through the conversation's SMS number. The run ends when the fake Twilio has every one.
 */
const hubspotRelayed: ChannelLoad = {
  channel: 'hubspot_relayed',
  async setup(url, businessId, fakes) {
    const inbox = await hubspotInbox(url, businessId, fakes);
    const { hubspot } = fakes;
    const threadsOf = new Map<number, string[]>();
    const path = '/channels/hubspot/webhook';
    return (tag, count, senders) => {
      // Each sender writes first, in the warm-up: the threads its mirrored text opened are what the replies answer.
      const threads = (async () => {
        const known = threadsOf.get(senders);
        if (known) return known;
        const pool = new Pool(url, { connections: 8 });
        const opened = await Promise.all(
          Array.from({ length: senders }, (_, n) => inbox.customerWrites(`relay-open ${n}`, n)(pool)),
        ).finally(() => pool.close());
        if (opened.some((status) => status !== 200)) throw new Error(`opening the conversations: ${opened.join(',')}`);
        await until(() => countTagged(mirroredTexts(hubspot), 'relay-open') >= senders, 'the opened threads', 300_000);
        const byText = new Map(hubspot.messages().map((m) => [m.text, m.integrationThreadId]));
        const found = Array.from({ length: senders }, (_, n) => byText.get(`relay-open ${n}`)!);
        threadsOf.set(senders, found);
        return found;
      })();
      return Array.from({ length: count }, (_, i) => async (pool: Pool) => {
        const threadId = (await threads)[i % senders];
        const event = outgoingMessageEvent({
          channelId: inbox.channelId,
          channelAccountId: inbox.accountId,
          threadId,
          text: `${tag} ${i}`,
        });
        // Signed when delivered: HubSpot's signature carries its time, refused 5 minutes on.
        const { payload, headers } = signedHubSpotWebhook(`${BENCH_PUBLIC_URL}${path}`, event, inbox.clientSecret);
        return posted({ id: `${tag}-${i}`, method: 'POST', path, headers, body: payload })(pool);
      });
    };
  },
  landed: ({ twilio }, tag) =>
    countTagged(
      twilio.sends().map((r) => r.form.Body),
      tag,
    ),
};

/** Every channel type the benchmark drives, in the order of its table. */
export const channelLoads: readonly ChannelLoad[] = [
  whatsapp,
  sms,
  metaMessaging('messenger'),
  metaMessaging('instagram'),
  tiktok,
  email,
  webEmbed,
  voice,
  whatsappWeb,
  // Last: the HubSpot inbox they make mirrors the business's SMS from then on.
  hubspotMirrored,
  hubspotRelayed,
];
