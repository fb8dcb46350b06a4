import { Type, type Static } from 'typebox';

/** Graph API version the adapter speaks unless a channel says otherwise. */
export const DEFAULT_GRAPH_API_BASE_URL = 'https://graph.facebook.com/v21.0';

/**
 * A channel's `provider` object for Meta's WhatsApp Cloud API, as the operator API takes it
 * (docs/API-GUIDE.md#whatsapp-channels-sending-templates-media).
 */
export const WhatsAppCloudConfigSchema = Type.Object(
  {
    kind: Type.Literal('whatsapp_cloud'),
    phone_number_id: Type.String({ pattern: '^[0-9]{1,32}$', description: "Meta's id of the business number" }),
    // RFC 6750's b64token: what an Authorization: Bearer header can carry (Meta's tokens are letters and digits).
    access_token: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: '^[A-Za-z0-9._~+/-]+=*$',
      description: 'System user access token (Bearer): letters, digits and -._~+/ (RFC 6750)',
    }),
    app_secret: Type.String({ minLength: 1, maxLength: 256, description: 'App secret that signs notifications' }),
    verify_token: Type.String({ minLength: 1, maxLength: 256, description: 'Token of the hub.challenge verification' }),
    api_base_url: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s]+$',
        maxLength: 512,
        description:
          `Graph API base including the version; default ${DEFAULT_GRAPH_API_BASE_URL}. http(s) without credentials ` +
          '(user:pass@ is refused, and never shown). Unless the service runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true, ' +
          'a literal loopback, private, link-local or metadata address (127.0.0.1, 10.x, 169.254.169.254, [::1], ...) ' +
          'is refused with 400, and every call (sends, media downloads) is refused when the host name resolves to such ' +
          'an address, checked on the connection itself.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Configuration of one WhatsApp Cloud API channel. */
export type WhatsAppCloudConfig = Static<typeof WhatsAppCloudConfigSchema>;
