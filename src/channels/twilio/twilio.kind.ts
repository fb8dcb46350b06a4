import { phoneAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { TwilioConfigSchema } from './twilio.config.ts';
import { parseForm } from '../twilio-common/twilio.form.ts';
import { readTwilioNotification } from './twilio.notifications.ts';
import { TwilioProvider } from './twilio.provider.ts';
import { bodyRefusal } from './twilio.segments.ts';

const receiveDescription = `Twilio's Messaging webhooks, form-encoded: incoming SMS and MMS (the number's "A message comes in"
URL) and status callbacks of the messages sent (queued, sent, delivered, undelivered, failed with ErrorCode).
Not under /external/v2 and without an API key: the channel is found by the number (To of a message, From of a
status callback) and X-Twilio-Signature (base64 HMAC-SHA1, keyed by the channel's auth_token, of PUBLIC_URL and
this path followed by the sorted form parameters) is checked, with AccountSid, before anything is stored. 401
when the header is missing or wrong, the account is not the channel's, or the number is not a channel's
(nothing is stored); 400 when the body is not a Twilio message notification. Answers an empty TwiML
<Response/>. MMS attachments are downloaded with the account's credentials. Messages are stored once per
MessageSid (redeliveries answer 200 and change nothing).`;

/** Twilio's Messaging API: channels of type `sms`, addressed by phone, notified by form-encoded webhook. */
export const twilioKind = defineChannelKind({
  kind: 'twilio',
  schema: TwilioConfigSchema,
  create: (config, http) => new TwilioProvider(config, http),
  secretFields: ['auth_token'],
  rotatingFields: ['auth_token'],
  changeableFields: ['api_base_url', 'messaging_service_sid'],
  urlFields: ['api_base_url'],
  lookupFields: [],
  accountField: 'from_number',
  identifierIsAccount: true,
  title: 'SMS (Twilio)',
  channelTypes: ['sms'],
  address: phoneAddress,
  capabilities: {
    serviceWindowHours: null,
    templates: false,
    // Twilio queues what it accepts and paces it by the sender's own throughput.
    defaultPacePerSecond: 10,
    mediaKinds: ['image', 'audio', 'video', 'document'],
  },
  textRefusal: bodyRefusal,
  createDocs: `SMS: \`identifier\` is the sender number and \`provider\` is required: {kind: "twilio", account_sid,
auth_token, from_number (E.164, the number Twilio's notifications name), messaging_service_sid?, api_base_url?}.`,
  inbound: {
    type: 'webhook',
    aliases: [],
    parse: (raw) => parseForm(raw),
    answer: { contentType: 'text/xml; charset=utf-8', body: '<?xml version="1.0" encoding="UTF-8"?><Response/>' },
    read: readTwilioNotification,
    refusals: { unknownAccount: 'unknown number', badSignature: 'invalid X-Twilio-Signature' },
    docs: { receive: { summary: 'Twilio Messaging webhooks (signed by Twilio)', description: receiveDescription } },
  },
});
