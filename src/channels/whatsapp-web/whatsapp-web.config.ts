import { Type, type Static } from 'typebox';

/**
 * A channel's `provider` object for a WhatsApp number linked like WhatsApp Web. Nothing secret is
 * typed in: the link's credentials are made when the phone scans the QR code, and stored sealed
 * with the link (ChannelLink), not in the config.
 */
export const WhatsAppWebConfigSchema = Type.Object(
  {
    kind: Type.Literal('whatsapp_web'),
    phone_number: Type.String({
      pattern: '^[1-9][0-9]{6,14}$',
      description: 'The WhatsApp number to link, digits with country code and no +, e.g. 15551234567',
    }),
  },
  { additionalProperties: false },
);

/** Configuration of one WhatsApp Web channel. */
export type WhatsAppWebConfig = Static<typeof WhatsAppWebConfigSchema>;
