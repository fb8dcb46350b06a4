import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { TEXT_MAX_CHARS } from './sending.schemas.ts';

export const ConversationParams = Type.Object({ id: Uuid }, { additionalProperties: false });

const replyTo = Type.Optional(
  Type.String({ format: 'uuid', description: 'a message of this conversation the reply quotes' }),
);

export const ReplyBody = Type.Union(
  [
    Type.Object(
      {
        text: Type.String({ minLength: 1, maxLength: TEXT_MAX_CHARS, description: 'a free-form text' }),
        reply_to: replyTo,
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        template_id: Type.String({ format: 'uuid', description: 'a template of the business (GET .../compose)' }),
        variables: Type.Optional(
          Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 1024 }), {
            maxProperties: 100,
            description:
              "the template's variables by name (numeric names fill positional ones: `1`, `2`, ...); others are ignored",
          }),
        ),
        reply_to: replyTo,
      },
      { additionalProperties: false },
    ),
  ],
  { description: '`{text}` or `{template_id, variables?}`, each with an optional `reply_to`' },
);
export type ReplyBody = Static<typeof ReplyBody>;

const Named = Type.Object({ id: Uuid, name: Type.String() });

/** The sent message as the conversation's thread shows it. */
export const ReplyMessage = Type.Object({
  kind: Type.Literal('message'),
  id: Uuid,
  conversation_id: Uuid,
  created_at: Timestamp,
  direction: Type.Literal('outbound'),
  type: Type.String({ description: '`text` or `template`' }),
  text: Type.String({ description: 'the text, or the template as filled' }),
  media: Type.Array(Type.Unknown(), { maxItems: 0 }),
  location: Type.Null(),
  contacts: Type.Array(Type.Unknown(), { maxItems: 0 }),
  choice: Type.Null(),
  reaction: Type.Null(),
  reply_to: Nullable(
    Type.Object({
      id: Uuid,
      type: Nullable(Type.String()),
      text: Nullable(Type.String()),
      direction: Nullable(Type.String()),
    }),
  ),
  forwarded: Type.Boolean(),
  status: Type.String({ description: 'PENDING until the provider takes it' }),
  error: Nullable(Type.String()),
  sender: Type.Object({
    type: Type.Literal('human'),
    user: Type.Object({ id: Uuid, name: Type.String(), email: Type.String() }),
    agent: Nullable(Named),
  }),
});
export const ReplyAnswer = Type.Object({ message: ReplyMessage });
export type ReplyAnswer = Static<typeof ReplyAnswer>;

export const ComposeAnswer = Type.Object({
  window_open: Type.Boolean({ description: 'whether free-form text may be sent now' }),
  window_ends_at: Nullable(Timestamp, {
    description:
      'when the service window closes (or closed); null when the contact never wrote or the channel has none',
  }),
  templates: Type.Array(
    Type.Object({
      id: Uuid,
      name: Type.String(),
      language: Type.String(),
      body: Type.String(),
      variables: Type.Array(Type.String(), { description: 'in the order they appear; numeric ones are positional' }),
    }),
    { description: "the business's templates this conversation's channel sends (at most 200)" },
  ),
});
export type ComposeAnswer = Static<typeof ComposeAnswer>;
