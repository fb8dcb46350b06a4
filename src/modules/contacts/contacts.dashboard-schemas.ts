import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';

/** The most contacts one page of the dashboard's list holds. */
export const MAX_PAGE = 100;
/** The contact page shows at most this many conversations, newest first. */
export const CONVERSATIONS_SHOWN = 50;
/** At most this many custom field definitions are read for one contact page. */
export const DEFINITIONS_SHOWN = 200;

export const ContactListQuery = Type.Object(
  {
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 254,
        description:
          'an email, phone number or external id: the contacts it identifies, found as GET /external/v2/contacts finds ' +
          'them (at most 50, no paging)',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 500, description: 'next_cursor of the previous page (not with q)' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 25 })),
  },
  { additionalProperties: false },
);
export type ContactListQuery = Static<typeof ContactListQuery>;

export const ContactSummary = Type.Object({
  id: Uuid,
  name: Type.String({ description: 'first and last name, empty when unknown' }),
  email: Nullable(Type.String()),
  phone_number: Nullable(Type.String({ description: 'digits with country code' })),
  external_id: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  created_at: Timestamp,
});
export type ContactSummary = Static<typeof ContactSummary>;

export const ContactList = Type.Object({
  contacts: Type.Array(ContactSummary),
  next_cursor: Nullable(Type.String(), { description: 'the next page, null on the last one and for a search' }),
});

const ContactFields = Type.Object({
  id: Uuid,
  name: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  email: Nullable(Type.String()),
  phone_number: Nullable(Type.String()),
  external_id: Nullable(Type.String()),
  avatar_url: Nullable(Type.String()),
  source: Nullable(Type.String()),
  assigned_user: Nullable(Type.String(), { description: 'email of the assigned user' }),
  is_test: Type.Boolean(),
  tags: Type.Array(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const ContactProfile = Type.Object({
  contact: ContactFields,
  custom_fields: Type.Array(
    Type.Object({
      key: Type.String(),
      name: Nullable(Type.String(), { description: "the definition's display name; null for a key without one" }),
      value: Type.Unknown({ description: 'null when the contact has no value for a defined field' }),
    }),
    { description: 'the defined fields first, in their order, then the keys without a definition' },
  ),
  aliases: Type.Array(
    Type.Object({
      kind: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
      value: Type.String({ description: 'lower-cased email, or phone digits without country variants' }),
    }),
    { description: 'emails and phones a merge left this contact, which still find it' },
  ),
  identities: Type.Array(
    Type.Object({
      kind: Type.String({
        description: 'address kind: page_scoped_id (Messenger), instagram_scoped_id, tiktok_conversation_id, ...',
      }),
      value: Type.String(),
    }),
    {
      description: "addresses channels know the contact by besides its phone and email, a merged duplicate's included",
    },
  ),
  conversations: Type.Array(
    Type.Object({
      id: Uuid,
      channel: Type.String(),
      created_at: Timestamp,
      last_message_at: Nullable(Timestamp),
      message_count: Type.Integer(),
      closed_at: Nullable(Timestamp),
    }),
    { description: `newest first, at most ${CONVERSATIONS_SHOWN}` },
  ),
  conversation_count: Type.Integer({ description: "all of the contact's conversations" }),
});
export type ContactProfile = Static<typeof ContactProfile>;

export const ContactDeletion = Type.Object({
  contact_id: Uuid,
  conversations: Type.Integer(),
  messages: Type.Integer(),
  events: Type.Integer(),
  media: Type.Integer({ description: "attachments of the contact's messages" }),
});
