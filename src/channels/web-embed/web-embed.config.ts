import { Type, type Static } from 'typebox';

/**
 * A channel's `provider` object for the website widget. `widget_id` is public (the script tag's
 * `data-channel`); `identity_secret` signs the identities a site vouches for (identity validation)
 * and never leaves the business's server.
 */
export const WebEmbedConfigSchema = Type.Object(
  {
    kind: Type.Literal('web_embed'),
    widget_id: Type.String({
      pattern: '^[A-Za-z0-9_-]{8,64}$',
      description: "The widget's public id: the script tag's data-channel. 8 to 64 letters, digits, _ or -",
    }),
    allowed_origins: Type.Array(
      Type.String({
        pattern: '^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$',
        maxLength: 255,
        description: 'An origin (scheme, host, port) of a site the widget is embedded on, e.g. https://shop.example',
      }),
      {
        minItems: 1,
        maxItems: 20,
        description: "The sites allowed to open the widget's sessions: every request's Origin must be one of them",
      },
    ),
    away_message: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description:
          'What the widget says when no one of the team has used the dashboard in the last 5 minutes; the widget ' +
          'then asks the visitor for an email address to answer them at. Default: a general line.',
      }),
    ),
    identity_secret: Type.Optional(
      Type.String({
        minLength: 16,
        maxLength: 256,
        // The bounds are in the pattern as well, so that strings generated from it fit them.
        pattern: '^[\\x21-\\x7e]{16,256}$',
        description:
          "Key of identity validation: the site computes hex HMAC-SHA256 of the customer's external id with it, on its " +
          'server, and the widget sends it with the identity. Without it, the widget does not take identities.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Configuration of one website widget channel. */
export type WebEmbedConfig = Static<typeof WebEmbedConfigSchema>;
