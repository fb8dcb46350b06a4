import { Type, type Static } from 'typebox';

/** Twilio's REST API unless a channel says otherwise. */
export const DEFAULT_TWILIO_API_BASE_URL = 'https://api.twilio.com';

/**
 * A channel's `provider` object for Twilio's Messaging API, as the operator API takes it. The
 * channel's number (`from_number`) is what Twilio's notifications name it by; with a messaging
 * service, sends go out through the service's sender pool instead.
 */
export const TwilioConfigSchema = Type.Object(
  {
    kind: Type.Literal('twilio'),
    account_sid: Type.String({
      pattern: '^AC[0-9a-fA-F]{32}$',
      description: 'Account SID (AC followed by 32 hex digits)',
    }),
    auth_token: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '^[\\x21-\\x7e]+$',
      description: 'Auth token: signs the notifications, and with the account SID authenticates every call',
    }),
    from_number: Type.String({
      pattern: '^\\+[1-9][0-9]{6,14}$',
      description: "The channel's number in E.164 (+15005550006): the sender of sends, the number notifications name",
    }),
    messaging_service_sid: Type.Optional(
      Type.String({
        pattern: '^MG[0-9a-fA-F]{32}$',
        description:
          'Messaging service SID: when set, sends go through the service (MessagingServiceSid) instead of From',
      }),
    ),
    api_base_url: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s]+$',
        maxLength: 512,
        description:
          `Twilio API base; default ${DEFAULT_TWILIO_API_BASE_URL}. http(s) without credentials. Unless the service runs ` +
          'with ALLOW_PRIVATE_WEBHOOK_TARGETS=true, a literal loopback, private, link-local or metadata address is refused ' +
          'with 400, and every call (sends, media downloads) is refused when the host name resolves to such an address.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Configuration of one Twilio SMS channel. */
export type TwilioConfig = Static<typeof TwilioConfigSchema>;
