import { phoneAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { metaAppFields } from '../meta/meta.config.ts';
import { metaHandshake, metaHandshakeDocs } from '../meta/meta.signature.ts';
import { WhatsAppCloudConfigSchema } from './whatsapp-cloud.config.ts';
import { readWhatsAppNotification } from './whatsapp-cloud.notifications.ts';
import { WhatsAppCloudProvider } from './whatsapp-cloud.provider.ts';

const receiveDescription = `Meta's WhatsApp Cloud API notifications (messages and delivery receipts). Not under /external/v2 and
without an API key: the channel is found by entry[].changes[].value.metadata.phone_number_id and the
X-Hub-Signature-256 header (HMAC-SHA256 of the raw body with that channel's app_secret) is checked on the
bytes as received before anything is stored. 401 unauthorized when the header is missing or wrong or a
phone_number_id is not a channel's (nothing is stored); 400 when the body is not a WhatsApp notification.
A notification that names no number (an account update) has no channel to check it against: it answers
200 and nothing is stored.
Messages are stored once per provider message id (redeliveries answer 200 and change nothing). 503
unavailable, nothing stored, when a channel it names is deleted or moved to another business while it is
being stored: the provider delivers it again.`;

/** Meta's WhatsApp Cloud API: channels of type `whatsapp`, addressed by phone, notified by webhook. */
export const whatsAppCloudKind = defineChannelKind({
  kind: 'whatsapp_cloud',
  schema: WhatsAppCloudConfigSchema,
  create: (config, http) => new WhatsAppCloudProvider(config, http),
  ...metaAppFields,
  accountField: 'phone_number_id',
  title: 'WhatsApp (Meta Cloud API)',
  channelTypes: ['whatsapp'],
  address: phoneAddress,
  capabilities: {
    serviceWindowHours: 24,
    templates: true,
    defaultPacePerSecond: 80,
    mediaKinds: ['image', 'audio', 'video', 'document', 'sticker'],
  },
  createDocs: `WhatsApp: \`identifier\` is the business number (digits with country code) and \`provider\` is required:
{kind: "whatsapp_cloud", phone_number_id, access_token, app_secret, verify_token, api_base_url?}.`,
  inbound: {
    type: 'webhook',
    // Meta's apps were configured with this path before the route was generic.
    aliases: ['whatsapp'],
    read: readWhatsAppNotification,
    refusals: { unknownAccount: 'unknown phone_number_id', badSignature: 'invalid X-Hub-Signature-256' },
    handshake: metaHandshake,
    docs: {
      receive: { summary: 'WhatsApp Cloud API notifications (signed by Meta)', description: receiveDescription },
      handshake: metaHandshakeDocs('WhatsApp'),
    },
  },
});
