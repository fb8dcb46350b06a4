import { Type, type Static } from 'typebox';
import { Nullable, OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { THREAD_EVENT_TYPES } from '../events/events.writer.ts';

export const THREAD_LIMIT_DEFAULT = 50;
export const THREAD_LIMIT_MAX = 100;

export const ThreadQuery = Type.Object(
  {
    limit: Type.Integer({
      minimum: 1,
      maximum: THREAD_LIMIT_MAX,
      default: THREAD_LIMIT_DEFAULT,
      description: `messages and events per page; default ${THREAD_LIMIT_DEFAULT}, max ${THREAD_LIMIT_MAX}`,
    }),
    cursor: Type.Optional(
      Type.String({ maxLength: 1000, description: 'next_cursor of the previous page: the older items' }),
    ),
  },
  { additionalProperties: false },
);
export type ThreadQuery = Static<typeof ThreadQuery>;

const Named = Type.Object({ id: Uuid, name: Type.String() });

const ThreadMedia = Type.Object({
  id: Nullable(Type.Integer(), { description: 'null for a file the business sent by its own address' }),
  url: Type.String({ description: 'signed download address, valid 120 minutes; or the address the business sent' }),
  filename: Nullable(Type.String()),
  content_type: Nullable(Type.String()),
  expires_at: Nullable(Timestamp, {
    description: 'when the signed address stops working; null for the business’s own',
  }),
});

const ContactCard = Type.Object({
  formatted_name: Nullable(Type.String()),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  organization: Nullable(Type.String()),
  phones: Type.Array(
    Type.Object({ phone: Type.String(), wa_id: Nullable(Type.String()), type: Nullable(Type.String()) }),
  ),
  emails: Type.Array(Type.Object({ email: Type.String(), type: Nullable(Type.String()) })),
  urls: Type.Array(Type.String()),
});

export const ThreadMessage = Type.Object({
  kind: Type.Literal('message'),
  id: Uuid,
  created_at: Timestamp,
  direction: OneOf(['inbound', 'outbound'] as const),
  type: Type.String({ description: 'text, image, audio, video, document, sticker, location, contacts, template...' }),
  text: Type.String({ description: 'the text or caption; may be empty' }),
  media: Type.Array(ThreadMedia, { description: 'its files, in the order they were attached' }),
  location: Nullable(
    Type.Object({
      latitude: Type.Number(),
      longitude: Type.Number(),
      name: Nullable(Type.String()),
      address: Nullable(Type.String()),
      url: Nullable(Type.String()),
    }),
  ),
  contacts: Type.Array(ContactCard, { description: 'contact cards the message shares' }),
  choice: Nullable(
    Type.Object({
      title: Type.String(),
      id: Nullable(Type.String()),
      description: Nullable(Type.String()),
      payload: Nullable(Type.String()),
    }),
    { description: 'the list row or button the contact chose' },
  ),
  reaction: Nullable(
    Type.Object({ message_id: Nullable(Uuid), emoji: Nullable(Type.String({ description: 'null: removed' })) }),
  ),
  reply_to: Nullable(
    Type.Object({
      id: Uuid,
      type: Nullable(Type.String()),
      text: Nullable(Type.String({ description: 'null when the quoted message is not stored' })),
      direction: Nullable(OneOf(['inbound', 'outbound'] as const)),
    }),
    { description: 'the message it quotes' },
  ),
  forwarded: Type.Boolean(),
  status: Type.String({ description: 'inbound RECEIVED; outbound PENDING, SENT, DELIVERED, READ or ERROR' }),
  error: Nullable(Type.String(), { description: "why it failed, in the provider's words; null unless ERROR" }),
  sender: Type.Object({
    type: OneOf(['contact', 'human', 'ai_agent', 'api', 'automation'] as const, {
      description: 'the contact, a user from the dashboard, the AI agent, the public API, an automation',
    }),
    user: Nullable(Named),
    agent: Nullable(Named),
  }),
});
export type ThreadMessage = Static<typeof ThreadMessage>;

export const ThreadEvent = Type.Object({
  kind: Type.Literal('event'),
  id: Uuid,
  created_at: Timestamp,
  type: OneOf(THREAD_EVENT_TYPES),
  actor_type: Type.String({ description: 'ai_agent, human, api or system' }),
  user: Nullable(Named),
  agent: Nullable(Named),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'as in GET /external/v2/events' }),
});
export type ThreadEvent = Static<typeof ThreadEvent>;

export const ThreadPage = Type.Object({
  items: Type.Array(Type.Union([ThreadMessage, ThreadEvent]), {
    description: 'newest first, messages and events merged on (created_at, id)',
  }),
  next_cursor: Nullable(Type.String(), { description: 'the older items; null at the start of the conversation' }),
});
