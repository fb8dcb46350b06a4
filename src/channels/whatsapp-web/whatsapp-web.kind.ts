import { phoneAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { WhatsAppWebConfigSchema } from './whatsapp-web.config.ts';
import { WhatsAppWebProvider } from './whatsapp-web.provider.ts';

/**
 * A WhatsApp number linked like WhatsApp Web (Baileys): channels of type `whatsapp_web`, addressed by
 * phone number as the Cloud API's are, so a person writing to both finds one contact. A number on
 * both keeps one conversation per person, the Cloud API channel's, and its messages once in the
 * exports: the web client's copy of a message the Cloud API channel holds is a duplicate
 * (migration 0048).
 */
export const whatsAppWebKind = defineChannelKind({
  kind: 'whatsapp_web',
  schema: WhatsAppWebConfigSchema,
  create: (config, http) => new WhatsAppWebProvider(config, http),
  secretFields: [],
  rotatingFields: [],
  changeableFields: [],
  urlFields: [],
  lookupFields: [],
  accountField: 'phone_number',
  identifierIsAccount: true,
  title: 'WhatsApp Web (linked phone)',
  channelTypes: ['whatsapp_web'],
  primaryChannelType: 'whatsapp',
  address: phoneAddress,
  capabilities: {
    serviceWindowHours: null,
    templates: false,
    // A linked phone is a person's app: bulk or fast sending gets numbers banned (docs/CHANNELS.md).
    defaultPacePerSecond: 1,
    mediaKinds: ['image', 'audio', 'video', 'document', 'sticker'],
  },
  createDocs: `WhatsApp Web: \`identifier\` is the number and \`provider\` is {kind: "whatsapp_web", phone_number (digits
with country code)}. The number is linked from the dashboard (Settings, Channels: a QR code or a pairing code).`,
  inbound: { type: 'socket', linked: { intervalMs: 2_000 } },
});
