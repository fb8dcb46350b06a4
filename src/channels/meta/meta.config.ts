import { Type } from 'typebox';

/** Graph API version the adapters speak unless a channel says otherwise. */
export const DEFAULT_GRAPH_API_BASE_URL = 'https://graph.facebook.com/v21.0';

/**
 * The fields of a Meta app's channel every Meta product shares (WhatsApp Cloud, Messenger,
 * Instagram): the token its calls carry, the secret that signs its notifications, the token of the
 * webhook's verification, and the Graph API base for tests.
 */
export const metaAppProperties = {
  // RFC 6750's b64token: what an Authorization: Bearer header can carry (Meta's tokens are letters and digits).
  access_token: Type.String({
    minLength: 1,
    maxLength: 2048,
    pattern: '^[A-Za-z0-9._~+/-]+=*$',
    description: 'Access token (Bearer): letters, digits and -._~+/ (RFC 6750)',
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
};

/** The fields a Meta channel's operator may replace: its secrets rotate, its API base changes. */
export const metaAppFields = {
  secretFields: ['access_token', 'app_secret', 'verify_token'],
  rotatingFields: ['access_token', 'app_secret', 'verify_token'],
  changeableFields: ['api_base_url'],
  urlFields: ['api_base_url'],
  lookupFields: ['verify_token'],
} as const;
