import { emailAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { HubSpotConfigSchema } from './hubspot.config.ts';
import { readHubSpotNotification } from './hubspot.notifications.ts';
import { HubSpotProvider } from './hubspot.provider.ts';

const receiveDescription = `A HubSpot custom channel's webhook: a reply written in HubSpot's inbox
(OUTGOING_CHANNEL_MESSAGE_CREATED) in a thread the service published, sent through the conversation's own channel
(the thread's integration id is the conversation's id) as a person's reply. Not under /external/v2 and without an API
key: the channel is found by message.channelAccountId, and X-HubSpot-Signature-v3 (base64 HMAC-SHA256, keyed by the
app's client secret, of POST, PUBLIC_URL and this path, the raw body and X-HubSpot-Request-Timestamp) is checked
before anything is stored: 401 when it is missing, wrong or older than five minutes, or the account is no channel's;
400 when the body is no HubSpot event, or names an attachment of type FILE without its fileId. A reply is sent once
per HubSpot message id (a redelivery answers 200 and sends nothing); one naming a conversation of another business, or
none, sends nothing. Its files (attachments of type FILE) are downloaded from HubSpot (the file's signed URL, within the
media limit) before the answer, and sent one message each through the conversation's channel, the text as the first
one's caption when it is an image, a video or a document, else a text message first; 503 when HubSpot could not give a
file for now (it delivers the reply again). A reply the channel refuses (an unknown or too large file, a media type it
does not send, a closed window) sends nothing and is marked FAILED on HubSpot's message with why. Other event types are
accepted and change nothing.`;

/**
 * A HubSpot custom channel account (`hubspot_chat`): mirrors the customers' messages of the
 * business's other channels into a HubSpot inbox and relays the replies written there.
 */
export const hubSpotKind = defineChannelKind({
  kind: 'hubspot',
  schema: HubSpotConfigSchema,
  create: (config, http) => new HubSpotProvider(config, http),
  secretFields: ['access_token', 'client_secret'],
  rotatingFields: ['access_token', 'client_secret'],
  changeableFields: ['api_base_url', 'mirror_channel_types'],
  urlFields: ['api_base_url'],
  lookupFields: [],
  accountField: 'channel_account_id',
  identifierIsAccount: true,
  title: 'HubSpot inbox (custom channel)',
  channelTypes: ['hubspot_chat'],
  // Its conversations are the other channels' own: no one is addressed through it.
  address: emailAddress,
  capabilities: {
    serviceWindowHours: null,
    templates: false,
    defaultPacePerSecond: 10,
    mediaKinds: [],
    mirrors: true,
  },
  createDocs: `HubSpot inbox: \`identifier\` is the channel account id and \`provider\` is required: {kind: "hubspot",
channel_id, channel_account_id, access_token, client_secret, mirror_channel_types? (default all), api_base_url?}.
Customers' messages of the business's other channels are mirrored into the inbox with their files (uploaded to
HubSpot's files: the app needs the \`files\` scope); replies written there, with their files, go out through each
conversation's own channel.`,
  inbound: {
    type: 'webhook',
    aliases: [],
    read: readHubSpotNotification,
    refusals: { unknownAccount: 'unknown channel account', badSignature: 'invalid X-HubSpot-Signature-v3' },
    docs: {
      receive: { summary: 'HubSpot custom channel webhook (signed by HubSpot)', description: receiveDescription },
    },
  },
});
