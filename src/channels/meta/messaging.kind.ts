import type { Static, TObject } from 'typebox';
import type { ChannelAddress } from '../addresses.ts';
import { defineChannelKind, type ChannelKind } from '../channel-kind.ts';
import type { ChannelType } from '../channel-types.ts';
import { metaAppFields } from './meta.config.ts';
import { metaHandshake, metaHandshakeDocs } from './meta.signature.ts';
import { metaMessagingReader } from './messaging.notifications.ts';
import type { MetaAppConfig } from './meta-app.provider.ts';
import { MetaMessagingProvider, type MetaMessagingProduct } from './messaging.provider.ts';

/** What a Messenger Platform product's entry says of itself; the rest is the platform's. */
export interface MetaMessagingEntry<Kind extends string, Schema extends TObject> {
  kind: Kind;
  schema: Schema;
  accountField: keyof Static<Schema> & string;
  /** The webhook body's `object`: `page` (Messenger), `instagram`. */
  object: string;
  title: string;
  /** What the dashboard and the docs call the product and its account ("Messenger", "page"). */
  product: string;
  accountName: string;
  channelTypes: readonly ChannelType[];
  address: ChannelAddress;
  /** Messenger's HUMAN_AGENT tag lets people answer for 7 days; Instagram's has no such window here. */
  humanWindowHours?: number;
  send: Omit<MetaMessagingProduct, 'kind'>;
  createDocs: string;
}

/**
 * A channel kind of Meta's Messenger Platform: the Send API within the 24-hour window, images,
 * audio, video and files by URL, notifications signed with X-Hub-Signature-256 and verified by
 * hub.challenge, one reader of their events.
 */
export function defineMetaMessagingKind<const Kind extends string, Schema extends TObject>(
  entry: MetaMessagingEntry<Kind, Schema>,
): ChannelKind<Kind, Schema> {
  const { product, accountName } = entry;
  return defineChannelKind({
    kind: entry.kind,
    schema: entry.schema,
    create: (config, http) => {
      const account = String((config as Record<string, unknown>)[entry.accountField]);
      return new MetaMessagingProvider(config as MetaAppConfig, account, { kind: entry.kind, ...entry.send }, http);
    },
    ...metaAppFields,
    accountField: entry.accountField,
    identifierIsAccount: true,
    title: entry.title,
    channelTypes: entry.channelTypes,
    address: entry.address,
    capabilities: {
      serviceWindowHours: 24,
      ...(entry.humanWindowHours ? { humanWindowHours: entry.humanWindowHours } : {}),
      templates: false,
      senderProfiles: true,
      // Meta paces the Send API per page; 40 a second stays well under its documented limits.
      defaultPacePerSecond: 40,
      mediaKinds: ['image', 'audio', 'video', 'document'],
    },
    createDocs: entry.createDocs,
    inbound: {
      type: 'webhook',
      aliases: [],
      read: metaMessagingReader(entry.object, product),
      refusals: { unknownAccount: `unknown ${accountName} id`, badSignature: 'invalid X-Hub-Signature-256' },
      handshake: metaHandshake,
      docs: {
        receive: { summary: `${product} webhook events (signed by Meta)`, description: receiveDescription(entry) },
        handshake: metaHandshakeDocs(product),
      },
    },
  });
}

function receiveDescription({
  product,
  accountName,
  object,
}: {
  product: string;
  accountName: string;
  object: string;
}) {
  return `Meta's ${product} webhook events (\`object: "${object}"\`): \`entry[].messaging[]\` (messages with text,
attachments, quick replies and replies; postbacks; reactions; deliveries and reads), \`entry[].standby[]\` (events while
another app holds the conversation: stored, no AI agent answers) and \`entry[].changes[]\` (the app dashboard's test
events). Not under /external/v2 and without an API key: the channel is found by the ${accountName} id (the recipient of
an event, the sender of an echo) and X-Hub-Signature-256 (HMAC-SHA256 of the raw body with that channel's app_secret) is
checked on the bytes as received before anything is stored. 401 when the header is missing or wrong or an id is not a
channel's (nothing is stored); 400 when the body is not a ${product} notification. Messages are stored once per mid.
An echo (\`is_echo\`) of a message the ${accountName} sent elsewhere is stored as an outbound message; the echo of one
this service sent is recognised (by its mid, or the id it carries in \`metadata\`) and not stored again. A delivery or
read watermark moves every earlier outbound message to the person.`;
}
