import { Type, type Static } from 'typebox';

/** TikTok's Business API unless a channel says otherwise. */
export const DEFAULT_TIKTOK_API_BASE_URL = 'https://business-api.tiktok.com';

/** Printable ASCII without spaces: what TikTok's ids, tokens and secrets are made of. */
const PRINTABLE = '^[\\x21-\\x7e]+$';

/**
 * A channel's `provider` object for TikTok Business Messaging, as the operator API takes it. The
 * business account's id (`business_id`, the `user_openid` of its notifications) names the channel;
 * the app's id and secret sign the notifications and refresh the OAuth tokens, which TikTok issues
 * for a day (the access token) and a year (the refresh token).
 */
export const TikTokConfigSchema = Type.Object(
  {
    kind: Type.Literal('tiktok'),
    business_id: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: PRINTABLE,
      description: "The TikTok business account's id (open_id): notifications name the channel by it",
    }),
    app_id: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: PRINTABLE,
      description: "The TikTok developer app's id (client id of the token refresh)",
    }),
    app_secret: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: PRINTABLE,
      description: "The app's secret: signs the notifications (Tiktok-Signature) and refreshes the tokens",
    }),
    access_token: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: PRINTABLE,
      description: "The business account's OAuth access token (Access-Token header); renewed by the service",
    }),
    refresh_token: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: PRINTABLE,
      description: 'The OAuth refresh token that renews the access token; replaced at each renewal',
    }),
    access_token_expires_at: Type.Optional(
      Type.String({
        maxLength: 40,
        pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})$',
        description:
          'When the access token expires (ISO 8601 with its offset): from a few minutes before, a send renews it ' +
          'first. Unknown when absent: the token is renewed when TikTok says it expired.',
      }),
    ),
    api_base_url: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s]+$',
        maxLength: 512,
        description:
          `TikTok Business API base; default ${DEFAULT_TIKTOK_API_BASE_URL}. http(s) without credentials. Unless the ` +
          'service runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true, a literal loopback, private, link-local or metadata ' +
          'address is refused with 400, and every call (sends, token renewals, media) is refused when the host name ' +
          'resolves to such an address.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Configuration of one TikTok Business Messaging channel. */
export type TikTokConfig = Static<typeof TikTokConfigSchema>;
