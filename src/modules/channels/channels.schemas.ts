import { Type, type Static } from 'typebox';
import { CHANNELS } from '../../channels/channel-types.ts';
import { ProviderConfigSchema, providerUpdateProperties } from '../../channels/registry.ts';
import { Nullable, OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';

/** Channel values of the contract. */
export const ChannelType = OneOf(CHANNELS, {
  description: 'one of the channel values of the contract',
});

const agentRefDescription =
  'the AI agent every new conversation of this channel gets (event agent_assigned, actor system); an agent of the business, 400 otherwise';
const AgentRef = Type.String({ format: 'uuid', description: agentRefDescription });

const PacePerSecond = Type.Integer({
  minimum: 1,
  maximum: 1000,
  description: 'most messages sent per second from this channel (default 80; WhatsApp numbers go up to 1000)',
});

export const CreateChannelBody = Type.Object(
  {
    type: ChannelType,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    identifier: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'the business address on the channel; WhatsApp: the number, digits with country code',
    }),
    provider: Type.Optional(ProviderConfigSchema),
    pace_per_second: Type.Optional(PacePerSecond),
    agent_id: Type.Optional(AgentRef),
  },
  { additionalProperties: false },
);
export type CreateChannelBody = Static<typeof CreateChannelBody>;

/** Secrets that can be rotated (and the API base moved), as each kind declares; the account itself never changes. */
const ProviderRotation = Type.Object(providerUpdateProperties(), {
  additionalProperties: false,
  description: 'provider fields to replace (secrets rotation); the others are kept',
});

export const UpdateChannelBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    pace_per_second: Type.Optional(PacePerSecond),
    provider: Type.Optional(ProviderRotation),
    agent_id: Type.Optional(Nullable(AgentRef, { description: `${agentRefDescription}; null: none` })),
  },
  { additionalProperties: false },
);
export type UpdateChannelBody = Static<typeof UpdateChannelBody>;

/** A channel as the operator API shows it: never its secrets. */
export const Channel = Type.Object({
  id: Uuid,
  type: Type.String(),
  name: Type.String(),
  identifier: Type.String(),
  pace_per_second: Type.Integer(),
  provider: Type.Union([
    Type.Object({
      kind: Type.String(),
      account: Nullable(Type.String(), { description: 'WhatsApp: phone_number_id' }),
      api_base_url: Type.Optional(
        Type.String({ description: 'the provider URL the channel calls, shown without credentials' }),
      ),
    }),
    Type.Null(),
  ]),
  agent_id: Nullable(Uuid, { description: 'the AI agent new conversations of this channel get; null: none' }),
  needs_credentials: Type.Boolean({
    description:
      "the provider refused the channel's credentials (an expired or revoked access token: Meta's code 190): " +
      'sends fail until the operator replaces them (PATCH provider with a new access token or other secret)',
  }),
  created_at: Timestamp,
});
export type ChannelForm = Static<typeof Channel>;
