import { Type, type Static } from 'typebox';
import { CHANNELS } from '../channel-types.ts';

/** HubSpot's API unless a channel says otherwise. */
export const DEFAULT_HUBSPOT_API_BASE_URL = 'https://api.hubapi.com';

/**
 * A channel's `provider` object for a HubSpot custom channel, as the operator API takes it: the
 * custom channel the app registered, the channel account connected to an inbox (the account its
 * webhook names), the app's token that publishes and its client secret that signs the webhook.
 */
export const HubSpotConfigSchema = Type.Object(
  {
    kind: Type.Literal('hubspot'),
    channel_id: Type.String({
      pattern: '^[0-9]{1,20}$',
      description: "The custom channel's id (HubSpot's answer when the app registered it)",
    }),
    channel_account_id: Type.String({
      pattern: '^[A-Za-z0-9_-]{1,64}$',
      description: 'The channel account connected to an inbox: the account the webhook names',
    }),
    access_token: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: '^[\\x21-\\x7e]+$',
      description: "The app's access token: publishes the mirrored messages",
    }),
    client_secret: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '^[\\x21-\\x7e]+$',
      description: "The app's client secret: signs the webhook (X-HubSpot-Signature-v3)",
    }),
    mirror_channel_types: Type.Optional(
      Type.Array(Type.Union(CHANNELS.map((c) => Type.Literal(c))), {
        uniqueItems: true,
        maxItems: CHANNELS.length,
        description: "The channel types whose customers' messages are mirrored into HubSpot; default all",
      }),
    ),
    api_base_url: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s]+$',
        maxLength: 512,
        description:
          `HubSpot API base; default ${DEFAULT_HUBSPOT_API_BASE_URL}. http(s) without credentials. Unless the service ` +
          'runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true, a literal loopback, private, link-local or metadata address is ' +
          'refused with 400, and every call is refused when the host name resolves to such an address.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Configuration of one HubSpot custom channel account. */
export type HubSpotConfig = Static<typeof HubSpotConfigSchema>;
