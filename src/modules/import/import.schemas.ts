import { Type, type Static, type TSchema } from 'typebox';
import { Timestamp, Uuid } from '../../http/common.schemas.ts';
import { CHANNELS } from '../../channels/channel-types.ts';
import { EVENT_TYPES } from '../events/events.writer.ts';

/** Stored message states (docs/ARCHITECTURE.md#message-status). */
export const MESSAGE_STATUSES = ['RECEIVED', 'PENDING', 'SENT', 'DELIVERED', 'READ', 'ERROR'] as const;

const text = (maxLength: number) => Type.String({ maxLength });
const nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));
const JsonObject = (description: string) =>
  Type.Optional(Type.Record(Type.String({ maxLength: 200 }), Type.Unknown(), { maxProperties: 200, description }));

/*
 * One record per line. `type` names the kind of record, so the message's own type and the event's
 * own type travel as `message_type` and `event_type`. Every record keeps its id and timestamps.
 */
export const ContactRecord = Type.Object(
  {
    type: Type.Literal('contact'),
    id: Uuid,
    first_name: Type.Optional(text(200)),
    last_name: Type.Optional(text(200)),
    email: nullable(Type.String({ format: 'email', maxLength: 320 })),
    phone_number: nullable(text(40)),
    external_id: nullable(Type.String({ minLength: 1, maxLength: 200 })),
    tags: Type.Optional(Type.Array(text(100), { maxItems: 100 })),
    custom_fields: JsonObject('custom field values by key'),
    is_test: Type.Optional(Type.Boolean()),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);

export const ConversationRecord = Type.Object(
  {
    type: Type.Literal('conversation'),
    id: Uuid,
    contact_id: Uuid,
    channel: Type.Enum(CHANNELS),
    channel_id: nullable(Uuid),
    created_at: Timestamp,
    closed_at: nullable(Timestamp),
  },
  { additionalProperties: false },
);

export const MessageRecord = Type.Object(
  {
    type: Type.Literal('message'),
    id: Uuid,
    conversation_id: Uuid,
    direction: Type.Enum(['inbound', 'outbound'] as const),
    sender_type: Type.Enum(['contact', 'ai_agent', 'human', 'api', 'automation'] as const),
    message_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 50,
        description: 'text, image, audio, document, template, ...; default text',
      }),
    ),
    text: Type.Optional(text(100_000)),
    status: Type.Enum(MESSAGE_STATUSES),
    error: nullable(text(10_000)),
    metadata: JsonObject('custom message metadata'),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);

export const EventRecord = Type.Object(
  {
    type: Type.Literal('event'),
    id: Uuid,
    conversation_id: nullable(Uuid),
    contact_id: Uuid,
    event_type: Type.Enum(EVENT_TYPES),
    actor_type: Type.Enum(['ai_agent', 'human', 'api', 'system'] as const),
    data: JsonObject('type-specific data, see the exported event types'),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);

export type ContactRecord = Static<typeof ContactRecord>;
export type ConversationRecord = Static<typeof ConversationRecord>;
export type MessageRecord = Static<typeof MessageRecord>;
export type EventRecord = Static<typeof EventRecord>;

/** Any import record, as the demo seed and other code build them. */
export type ImportRecord = ContactRecord | ConversationRecord | MessageRecord | EventRecord;

export const ImportResult = Type.Object({
  imported: Type.Object({
    contacts: Type.Integer(),
    conversations: Type.Integer(),
    messages: Type.Integer(),
    events: Type.Integer(),
  }),
  errors: Type.Array(
    Type.Object({ line: Type.Integer({ description: 'line number, from 1' }), message: Type.String() }),
    {
      description: 'the first 1000 bad lines; error_count counts them all',
    },
  ),
  error_count: Type.Integer({ description: 'number of lines that were not imported because of an error' }),
});
export type ImportResult = Static<typeof ImportResult>;
