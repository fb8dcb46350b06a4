import { Type } from 'typebox';

/** Twilio's REST API unless a channel says otherwise. */
export const DEFAULT_TWILIO_API_BASE_URL = 'https://api.twilio.com';

/** A phone number in E.164, as Twilio writes them (+15005550006). */
export const E164_PATTERN = '^\\+[1-9][0-9]{6,14}$';

/**
 * The fields of a Twilio account every Twilio product's channel shares (SMS, voice): the account
 * SID and auth token its calls carry (the token also signs its webhooks), and the API base for tests.
 */
export const twilioAccountProperties = {
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
};
