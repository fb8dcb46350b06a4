import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';

export const MESSAGE_LIMIT_DEFAULT = 50;
export const MESSAGE_LIMIT_MAX = 200;

export const ConversationLookupQuery = Type.Object(
  {
    phone: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 32,
        description:
          'digits with country code, e.g. 5491123456789; matches country variants (mobile 9 of AR/CL, legacy 1 of MX) and phone aliases left by merges',
      }),
    ),
    field_key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'key of a contact field defined for the business; requires field_value',
      }),
    ),
    field_value: Type.Optional(
      Type.String({
        maxLength: 1000,
        description:
          "value the contact's custom field must equal (text; a numeric or true/false text also matches a number or boolean stored value); requires field_key",
      }),
    ),
    message_limit: Type.Integer({
      minimum: 1,
      maximum: MESSAGE_LIMIT_MAX,
      default: MESSAGE_LIMIT_DEFAULT,
      description: 'most recent messages to return',
    }),
  },
  { additionalProperties: false },
);
export type ConversationLookupQuery = Static<typeof ConversationLookupQuery>;

export const LookupMessage = Type.Object({
  id: Uuid,
  text: Type.String(),
  direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')]),
  status: Type.String({ description: 'inbound RECEIVED; outbound PENDING, SENT, DELIVERED, READ or ERROR' }),
  error: Nullable(Type.String(), { description: 'null unless the message failed' }),
  created_at: Timestamp,
});

export const ConversationLookup = Type.Object({
  contact: Type.Object({
    id: Uuid,
    first_name: Type.String(),
    last_name: Type.String(),
    phone_number: Nullable(Type.String(), {
      description: 'digits with country code; null when the contact has no phone',
    }),
  }),
  conversation: Type.Object({
    id: Uuid,
    platform: Type.String({ description: 'channel of the conversation, e.g. whatsapp' }),
    created_at: Timestamp,
    last_message_at: Nullable(Timestamp, { description: 'null while the conversation has no message' }),
    message_count: Type.Integer({ description: 'all messages of the conversation, not only those returned' }),
    messages: Type.Array(LookupMessage, {
      description:
        'the most recent message_limit messages, returned oldest first (in reading order, as a chat shows them)',
    }),
  }),
});
