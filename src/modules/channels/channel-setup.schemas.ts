import { Type, type Static, type TObject, type TSchema } from 'typebox';
import { channelKinds } from '../../channels/registry.ts';
import { Nullable, OneOf } from '../../http/common.schemas.ts';
import { Channel, ChannelType, CreateChannelBody, UpdateChannelBody } from './channels.schemas.ts';

/**
 * A kind's provider object as the dashboard takes it: the registry's schema, with the field of the
 * subscription handshake optional (the service makes one up when it is left out).
 */
function dashboardProviderSchema(schema: TObject, handshakeField: string | undefined): TObject {
  if (!handshakeField || !(handshakeField in schema.properties)) return schema;
  const properties: Record<string, TSchema> = { ...schema.properties };
  const field = properties[handshakeField] as TSchema & { description?: string };
  properties[handshakeField] = Type.Optional({
    ...field,
    description: `${field.description ?? ''}; made up when left out`,
  });
  return Type.Object(properties, { additionalProperties: false });
}

const providerSchemas = channelKinds.map((k) =>
  dashboardProviderSchema(k.schema, k.inbound.type === 'webhook' ? k.inbound.handshake?.lookupField : undefined),
);

export const ConnectChannelBody = Type.Object(
  {
    ...CreateChannelBody.properties,
    provider: providerSchemas.length === 1 ? providerSchemas[0] : Type.Union(providerSchemas),
  },
  { additionalProperties: false },
);
export type ConnectChannelBody = Static<typeof ConnectChannelBody>;

export const EditChannelBody = Type.Object(
  {
    name: CreateChannelBody.properties.name,
    pace_per_second: CreateChannelBody.properties.pace_per_second,
    agent_id: UpdateChannelBody.properties.agent_id,
  },
  { additionalProperties: false, minProperties: 1 },
);

/** A field of a kind's configuration form, read from the kind's schema. */
export const FormField = Type.Object({
  name: Type.String({
    description: "the field's path in the provider object: `app_secret`, or `smtp.host` for a nested object's field",
  }),
  description: Type.String(),
  type: OneOf(['text', 'url', 'integer', 'boolean', 'list'] as const),
  required: Type.Boolean(),
  secret: Type.Boolean({ description: 'stored encrypted and never shown again' }),
  pattern: Type.Optional(Type.String()),
  max_length: Type.Optional(Type.Integer()),
});

export const ChannelKindForm = Type.Object({
  kind: Type.String(),
  title: Type.String({ description: "the channel and its vendor's product, as the dashboard names the kind" }),
  channel_types: Type.Array(ChannelType),
  address_kind: OneOf(
    ['phone', 'email', 'page_scoped_id', 'instagram_scoped_id', 'tiktok_conversation_id', 'visitor_id'] as const,
    { description: "what the channel's identifier is: a phone number, an email address, ..." },
  ),
  webhook_url: Nullable(Type.String(), { description: 'PUBLIC_URL and the path Meta (or the provider) posts to' }),
  identifier_field: Nullable(Type.String(), {
    description:
      "the field whose value is the channel's identifier too (a page id, an account id); null: the identifier " +
      '(a number, an email address) is asked for on its own',
  }),
  fields: Type.Array(FormField),
});

export const SettingsChannel = Type.Object({
  ...Channel.properties,
  webhook_url: Nullable(Type.String()),
  secrets: Type.Record(Type.String(), Type.String(), {
    description: 'each secret field of the provider config, masked: its value is never shown back',
  }),
  linked: Type.Boolean({
    description: 'linked to the phone as a device (WhatsApp Web): its link is shown by GET /channels/{id}/link',
  }),
});
export type SettingsChannel = Static<typeof SettingsChannel>;

export const ConnectedChannel = Type.Object({
  channel: SettingsChannel,
  webhook: Type.Object({
    url: Nullable(Type.String()),
    verify_token: Nullable(Type.String(), {
      description: 'the token of the subscription handshake to paste into the provider; shown only now',
    }),
  }),
});

/** A channel's link to the phone, for a channel linked as a device (channel-links.service.ts). */
export const LinkView = Type.Object({
  state: Type.Union([Type.Literal('unlinked'), Type.Literal('qr'), Type.Literal('linked'), Type.Literal('logged_out')]),
  qr: Type.Union([Type.String(), Type.Null()], { description: "The QR code's content, while `qr`" }),
  qr_image: Type.Union([Type.String(), Type.Null()], { description: 'The QR code as a PNG data URL, while `qr`' }),
  pairing_code: Type.Union([Type.String(), Type.Null()], {
    description: 'The code to type on the phone instead of scanning, once asked for',
  }),
  requested: Type.Boolean({ description: 'A link was asked for and is not made yet' }),
  account: Type.Union([Type.String(), Type.Null()], { description: 'The number linked' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const LinkBody = Type.Object(
  {
    phone_number: Type.Optional(
      Type.String({
        minLength: 7,
        maxLength: 32,
        description: 'The number to show a pairing code for (with country code), to link without scanning',
      }),
    ),
  },
  { additionalProperties: false },
);
