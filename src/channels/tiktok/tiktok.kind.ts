import { tiktokConversationIdAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { TikTokConfigSchema } from './tiktok.config.ts';
import { readTikTokNotification } from './tiktok.notifications.ts';
import { TikTokProvider } from './tiktok.provider.ts';

/** TikTok's longest text message, counted in characters (emoji and spaces included). */
export const MAX_TEXT_CHARACTERS = 6000;

const receiveDescription = `TikTok's Business Messaging webhook events, one a request: \`im_receive_msg\` (a customer's message:
text, image; other types are stored as unsupported), \`im_send_msg\` (a message the business account sent, from TikTok's
app or another tool: stored as an outbound message of a person, no message_created webhook; the echo of a send of this
service is recognised by its message id and not stored again) and \`im_mark_read_msg\` (the customer read the
conversation: every earlier outbound message to them becomes READ). \`content\` is a JSON string. Not under /external/v2
and without an API key: the channel is found by \`user_openid\` (the business account's id) and Tiktok-Signature
(\`t=<unix seconds>,s=<hex>\`: HMAC-SHA256 of \`<t>.<raw body>\` with that channel's app_secret, t within 5 minutes of the
service's clock) is checked on the bytes as received before anything is stored. 401 when the header is missing, wrong
or stale, or the account is not a channel's (nothing is stored); 400 when the body is not a TikTok event. Messages are
stored once per message_id (TikTok retries for up to 72 hours).`;

/** TikTok Business Messaging: channels of type `tiktok`, addressed by conversation id. */
export const tiktokKind = defineChannelKind({
  kind: 'tiktok',
  schema: TikTokConfigSchema,
  create: (config, http, credentials) => new TikTokProvider(config, http, credentials),
  secretFields: ['app_secret', 'access_token', 'refresh_token'],
  rotatingFields: ['app_secret', 'access_token', 'refresh_token'],
  changeableFields: ['app_id', 'access_token_expires_at', 'api_base_url'],
  urlFields: ['api_base_url'],
  renewedFields: ['access_token', 'refresh_token', 'access_token_expires_at'],
  lookupFields: [],
  accountField: 'business_id',
  identifierIsAccount: true,
  title: 'TikTok (Business Messaging)',
  channelTypes: ['tiktok'],
  address: tiktokConversationIdAddress,
  capabilities: {
    // TikTok lets a business answer for 48 hours after the customer's last message.
    serviceWindowHours: 48,
    templates: false,
    // The Business API's rate limits are per app and endpoint, some ten calls a second.
    defaultPacePerSecond: 10,
    mediaKinds: ['image'],
  },
  textRefusal: (text) => {
    const characters = [...text].length;
    return characters > MAX_TEXT_CHARACTERS
      ? `TikTok takes at most ${MAX_TEXT_CHARACTERS} characters; this text has ${characters}`
      : null;
  },
  createDocs: `TikTok: \`identifier\` is the business account's id and \`provider\` is required: {kind: "tiktok", business_id,
app_id, app_secret, access_token, refresh_token, access_token_expires_at?, api_base_url?}. The tokens are renewed by the
service and stored sealed.`,
  inbound: {
    type: 'webhook',
    aliases: [],
    read: readTikTokNotification,
    refusals: { unknownAccount: 'unknown business account', badSignature: 'invalid or stale Tiktok-Signature' },
    docs: {
      receive: {
        summary: 'TikTok Business Messaging webhook events (signed by TikTok)',
        description: receiveDescription,
      },
    },
  },
});
