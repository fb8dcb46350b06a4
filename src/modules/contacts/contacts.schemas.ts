import { Type, type Static } from 'typebox';
import { CHANNELS } from '../../channels/channel-types.ts';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';

/** At most this many contacts answer one search (the contract's limit). */
export const SEARCH_LIMIT = 50;
/** A contact keeps at most this many custom fields and tags; one request may send at most as many. */
export const MAX_CUSTOM_FIELDS = 50;
export const MAX_TAGS = 50;

const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'email address' });
const PhoneInput = Type.String({
  minLength: 1,
  maxLength: 32,
  description: 'phone number with country code; digits (a leading + and separators are tolerated)',
});
const ExternalId = Type.String({ minLength: 1, maxLength: 255, description: "the caller's own id for the person" });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  maxItems: MAX_TAGS,
  description: 'tag list; duplicates are dropped',
});

export const CustomFieldValue = Type.Union([
  Type.String({ maxLength: 2000 }),
  Type.Number(),
  Type.Boolean(),
  Type.Null(),
]);
/** Keys are identifiers; values are scalars, null removes the key on update. */
export const CustomFields = Type.Record(
  Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$' }),
  CustomFieldValue,
  {
    additionalProperties: false,
    maxProperties: MAX_CUSTOM_FIELDS,
    description: `key-value pairs; keys match ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$, at most ${MAX_CUSTOM_FIELDS}; string values up to 2000 characters`,
  },
);

/** Snake_case form of a contact (search, create, read). */
export const ContactSnake = Type.Object(
  {
    id: Uuid,
    first_name: Type.String(),
    last_name: Type.String(),
    email: Nullable(Type.String(), { description: 'null when the contact has no email' }),
    phone_number: Nullable(Type.String(), {
      description: 'digits only, with country code; null when the contact has no phone',
    }),
    external_id: Nullable(Type.String()),
    identities: Type.Array(
      Type.Object({
        kind: Type.String({
          description: 'address kind: page_scoped_id (Messenger), instagram_scoped_id, tiktok_conversation_id, ...',
        }),
        value: Type.String(),
      }),
      {
        description:
          "addresses channels know the contact by besides its phone and email (a Messenger page-scoped id, say); after a merge, the duplicate's too",
      },
    ),
    created_at: Timestamp,
  },
  { description: 'contact, snake_case form' },
);

/** camelCase form of a contact (update, close conversation, webhook). */
export const ContactCamel = Type.Object(
  {
    uuid: Uuid,
    name: Type.String({ description: 'full name' }),
    phoneNumber: Nullable(Type.String(), { description: 'with leading plus sign; null when the contact has no phone' }),
    avatarUrl: Nullable(Type.String(), {
      description:
        "the contact's picture; one from a Messenger or Instagram profile is the service's copy at PUBLIC_URL/files/avatars/..., served without a key to whoever has the address",
    }),
    createdAt: Timestamp,
    source: Nullable(Type.String(), {
      description: 'channel the contact came from, e.g. whatsapp; api for contacts created through the API',
    }),
    closedAt: Nullable(Timestamp, {
      description: 'latest closing time when none of its conversations is open, else null',
    }),
    href: Type.String({ description: 'dashboard link to the contact' }),
    conversationHref: Type.String({
      description: "dashboard link to the contact's most recent conversation (the contact link when it has none)",
    }),
    tags: Type.Array(Type.String()),
    assignedUser: Nullable(Type.String(), { description: 'email of the assigned business user' }),
    customFields: Type.Record(Type.String(), Type.Unknown()),
  },
  { description: 'contact, camelCase form' },
);
export type ContactCamelForm = Static<typeof ContactCamel>;
export type ContactSnakeForm = Static<typeof ContactSnake>;

export const SearchQuery = Type.Object(
  {
    email: Type.Optional(Email),
    phone: Type.Optional(PhoneInput),
    external_id: Type.Optional(ExternalId),
    channel: Type.Optional(
      Type.Union(
        CHANNELS.map((c) => Type.Literal(c)),
        { description: 'with address: the channel type the address belongs to' },
      ),
    ),
    address: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        description:
          "with channel: how that channel addresses the person (a Messenger page-scoped id, an Instagram-scoped id, an email address, a phone number); matches the contact its traffic lands on, a merged duplicate's addresses included",
      }),
    ),
  },
  { additionalProperties: false },
);
export type SearchQuery = Static<typeof SearchQuery>;

/** Fields of POST /contacts; the operator API adds is_test. */
export const createContactFields = {
  first_name: Type.Optional(Type.String({ maxLength: 200 })),
  last_name: Type.Optional(Type.String({ maxLength: 200 })),
  email: Type.Optional(Email),
  phone_number: Type.Optional(PhoneInput),
  external_id: Type.Optional(ExternalId),
  tags: Type.Optional(Tags),
  custom_fields: Type.Optional(CustomFields),
};
export const CreateContactBody = Type.Object(createContactFields, {
  additionalProperties: false,
  description: 'at least one of email, phone_number, external_id is required',
});
export const CreateContactInput = Type.Object({ ...createContactFields, is_test: Type.Optional(Type.Boolean()) });
export type CreateContactInput = Static<typeof CreateContactInput>;

export const UpdateContactBody = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 400,
        description: 'full name: the first word becomes the first name, the rest the last name',
      }),
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: MAX_TAGS,
        description: "full replacement of the tag list; synced to the contact's conversations",
      }),
    ),
    custom_fields: Type.Optional(CustomFields),
    assigned_user: Type.Optional(
      Type.String({ minLength: 1, maxLength: 254, description: 'email of the business user to assign' }),
    ),
    unassign_user: Type.Optional(Type.Boolean({ description: 'true removes the assigned user' })),
  },
  { additionalProperties: false },
);
export type UpdateContactBody = Static<typeof UpdateContactBody>;

export const ContactResponse = Type.Object({ contact: ContactSnake });
export const ContactCamelResponse = Type.Object({
  contact: Type.Array(ContactCamel, { description: 'always one element' }),
});
export const SearchResponse = Type.Object({ results: Type.Array(ContactSnake) });

/**
 * The path of DELETE /contacts/:uuid and POST /contacts/:uuid/conversation/close, whose contract
 * lists no 400: an id that is not a UUID names no contact, so it answers 404.
 */
export const ContactPathLenient = Type.Object(
  { uuid: Type.String({ maxLength: 200, description: 'contact id (UUID); any other value answers 404' }) },
  { additionalProperties: false },
);

export const DeleteResponse = Type.Object({ success: Type.Boolean(), contact_id: Uuid });
