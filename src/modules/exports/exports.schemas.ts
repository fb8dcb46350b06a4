import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { CHANNELS } from '../../channels/channel-types.ts';
import { EVENT_TYPES } from '../events/events.writer.ts';

export const EXPORT_LIMIT_DEFAULT = 100;
export const EXPORT_LIMIT_MAX = 500;

const common = {
  since: Type.String({
    maxLength: 40,
    description: 'ISO 8601; records created at or after it (a date alone is midnight UTC)',
  }),
  until: Type.Optional(
    Type.String({
      maxLength: 40,
      description: 'ISO 8601; records created before it; default now; at most 31 days after since',
    }),
  ),
  channel: Type.Optional(
    Type.String({ maxLength: 200, description: `comma-separated channels (${CHANNELS.join(', ')}); default all` }),
  ),
  limit: Type.Integer({
    minimum: 1,
    maximum: EXPORT_LIMIT_MAX,
    default: EXPORT_LIMIT_DEFAULT,
    description: 'per page; default 100, max 500',
  }),
  cursor: Type.Optional(
    Type.String({
      maxLength: 1000,
      description: 'next_cursor of the previous page, with the same since, until, channel (and types)',
    }),
  ),
};

export const MessagesExportQuery = Type.Object(common, { additionalProperties: false });
export type MessagesExportQuery = Static<typeof MessagesExportQuery>;

export const EventsExportQuery = Type.Object(
  {
    ...common,
    types: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: `comma-separated event types (${EVENT_TYPES.join(', ')}); default all; an unknown type answers 400`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventsExportQuery = Static<typeof EventsExportQuery>;

export const AgentRef = Type.Object({ id: Uuid, name: Type.String() });
export const UserRef = Type.Object({ id: Uuid, name: Type.String(), email: Type.String() });

export const MessageExport = Type.Object({
  id: Uuid,
  conversation_id: Uuid,
  contact_id: Uuid,
  channel: Type.String(),
  direction: Type.String({ description: 'inbound or outbound' }),
  sender_type: Type.String({ description: 'contact, ai_agent, human, api or automation' }),
  agent: Nullable(AgentRef, { description: 'AI agent that replied' }),
  user: Nullable(UserRef, { description: 'team member who replied from the dashboard' }),
  type: Type.String(),
  text: Type.String(),
  media: Nullable(
    Type.Object({ id: Type.Integer(), filename: Nullable(Type.String()), content_type: Nullable(Type.String()) }),
    { description: 'first attached file; GET /media/:id gives a download address' },
  ),
  reply_to_id: Nullable(Uuid),
  status: Type.String({ description: 'RECEIVED, PENDING, SENT, DELIVERED, READ or ERROR' }),
  error: Nullable(Type.String()),
  created_at: Timestamp,
});
export type MessageExport = Static<typeof MessageExport>;

export const EventRecord = Type.Object({
  id: Uuid,
  type: Type.String(),
  conversation_id: Nullable(Uuid, { description: 'null for contact_field_changed' }),
  contact_id: Uuid,
  channel: Nullable(Type.String(), { description: 'null for contact_field_changed' }),
  actor_type: Type.String({ description: 'ai_agent, human, api or system' }),
  agent: Nullable(AgentRef),
  user: Nullable(UserRef),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'type-specific, see the event types' }),
  created_at: Timestamp,
});
export type EventRecord = Static<typeof EventRecord>;

const NextCursor = Nullable(Type.String(), {
  description: 'pass it as cursor to get the next page; null only when the window is done',
});
export const MessagesExportPage = Type.Object({ messages: Type.Array(MessageExport), next_cursor: NextCursor });
export const EventsExportPage = Type.Object({ events: Type.Array(EventRecord), next_cursor: NextCursor });
