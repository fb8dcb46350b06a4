import { Type, type Static } from 'typebox';
import { CHANNELS } from '../../channels/channel-types.ts';
import { Nullable, OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { UNREAD_CAP, UNREAD_WINDOW } from './inbox.repository.ts';

export const INBOX_LIMIT_DEFAULT = 30;
export const INBOX_LIMIT_MAX = 100;

export const InboxQuery = Type.Object(
  {
    status: Type.Optional(
      OneOf(['open', 'closed'] as const, {
        description: 'open (the default) or closed: archived or closed conversations',
      }),
    ),
    channel: Type.Optional(
      Type.Union([Type.String({ format: 'uuid' }), OneOf(CHANNELS)], {
        description: `a channel's id, or a channel type (${CHANNELS.join(', ')})`,
      }),
    ),
    assignee: Type.Optional(
      Type.Union([Type.Literal('me'), Type.Literal('unassigned'), Type.String({ format: 'uuid' })], {
        description:
          'me (assigned to the signed-in user), unassigned (to no user), or the id of a user or a team of the business',
      }),
    ),
    team: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'the id of a team of the business: its conversations, whichever user works them (combines with assignee)',
      }),
    ),
    control: Type.Optional(
      OneOf(['manual', 'ai'] as const, {
        description: 'manual: people answer (manual control); ai: not under manual control',
      }),
    ),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'what the contacts list searches (GET /dashboard/api/contacts?q=: an email in any case, a phone with ' +
          'country code with or without the optional mobile digit, an external id, aliases left by merges), and ' +
          "unless it is an email or a phone, the start of a contact's full name or last name, in any case",
      }),
    ),
    limit: Type.Integer({
      minimum: 1,
      maximum: INBOX_LIMIT_MAX,
      default: INBOX_LIMIT_DEFAULT,
      description: `conversations per page; default ${INBOX_LIMIT_DEFAULT}, max ${INBOX_LIMIT_MAX}`,
    }),
    cursor: Type.Optional(
      Type.String({ maxLength: 1000, description: 'next_cursor of the previous page, with the same filters' }),
    ),
  },
  { additionalProperties: false },
);
export type InboxQuery = Static<typeof InboxQuery>;

const Named = Type.Object({ id: Uuid, name: Type.String() });
const UnreadCount = Type.Integer({
  minimum: 0,
  maximum: UNREAD_CAP,
  description: `inbound messages after the signed-in user's read position, counted up to ${UNREAD_CAP} (${UNREAD_CAP}: more than 99, shown 99+)`,
});

export const InboxConversation = Type.Object({
  id: Uuid,
  contact: Type.Object({
    id: Uuid,
    first_name: Type.String(),
    last_name: Type.String(),
    phone_number: Nullable(Type.String(), { description: 'digits with country code' }),
    email: Nullable(Type.String()),
  }),
  channel: Type.Object({
    type: Type.String({ description: 'e.g. whatsapp' }),
    id: Nullable(Uuid, { description: 'null for history imported without its channel' }),
    name: Nullable(Type.String()),
  }),
  last_message: Nullable(
    Type.Object({
      id: Uuid,
      type: Type.String({ description: 'text, image, audio, location...: what to show when text is empty' }),
      text: Type.String({ description: 'its first 200 characters; may be empty' }),
      direction: OneOf(['inbound', 'outbound'] as const),
      status: Type.String({ description: 'inbound RECEIVED; outbound PENDING, SENT, DELIVERED, READ or ERROR' }),
      created_at: Timestamp,
    }),
    { description: 'null while the conversation has no message' },
  ),
  last_activity_at: Timestamp,
  created_at: Timestamp,
  assignee: Type.Object({
    user: Nullable(Named),
    team: Nullable(Named),
    agent: Nullable(Named, { description: 'the AI agent' }),
  }),
  manual_control: Type.Boolean({ description: 'people, not the AI agent, answer' }),
  manual_control_locked: Type.Boolean({ description: 'manual control pinned: the AI does not take over on its own' }),
  closed: Type.Boolean(),
  closed_at: Nullable(Timestamp),
  unread_count: UnreadCount,
});
export type InboxConversation = Static<typeof InboxConversation>;

export const InboxPage = Type.Object({
  conversations: Type.Array(InboxConversation, {
    description: 'newest activity first: the last message, else the creation',
  }),
  next_cursor: Nullable(Type.String(), { description: 'null on the last page' }),
});

export const ConversationDetail = Type.Object({
  conversation: Type.Object({
    ...InboxConversation.properties,
    message_count: Type.Integer(),
    tags: Type.Array(Type.String()),
  }),
  contact: Type.Object({
    id: Uuid,
    first_name: Type.String(),
    last_name: Type.String(),
    email: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    external_id: Nullable(Type.String()),
    avatar_url: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    custom_fields: Type.Record(Type.String(), Type.Unknown()),
    created_at: Timestamp,
  }),
});

export const ReadBody = Type.Object(
  {
    message_id: Type.Optional(
      Type.String({
        format: 'uuid',
        description: "a message of the conversation; default its latest. Earlier than the user's position: no change",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReadBody = Static<typeof ReadBody>;

export const ReadAnswer = Type.Object({
  conversation_id: Uuid,
  last_read_message_id: Nullable(Uuid, { description: 'null while the user has read nothing (no message yet)' }),
  read_at: Nullable(Timestamp),
  unread_count: UnreadCount,
});

export const UnreadTotal = Type.Object({
  unread_conversations: Type.Integer({
    minimum: 0,
    maximum: UNREAD_CAP,
    description:
      `open conversations with unread inbound messages for the signed-in user, among the ${UNREAD_WINDOW} most ` +
      `recently active, counted up to ${UNREAD_CAP} (${UNREAD_CAP}: more than 99, shown 99+)`,
  }),
});
