import { Type, type Static } from 'typebox';
import { Nullable, OneOf, Uuid } from '../../http/common.schemas.ts';
import { ContactCamel } from '../contacts/contacts.schemas.ts';

export const MESSAGE_TYPES = ['text', 'image', 'audio', 'video', 'document', 'sticker', 'template'] as const;

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: '^https?://\\S+$',
  description: 'public http(s) address the provider downloads the file from',
});

/** The longest text and caption a send takes, whoever writes it (the API, the dashboard, a relayed reply). */
export const TEXT_MAX_CHARS = 4096;
export const CAPTION_MAX_CHARS = 1024;

export const MessageContent = Type.Object(
  {
    text: Type.Optional(
      Type.String({ minLength: 1, maxLength: TEXT_MAX_CHARS, description: 'the text of a `text` message' }),
    ),
    url: Type.Optional(Url),
    caption: Type.Optional(
      Type.String({ maxLength: CAPTION_MAX_CHARS, description: 'image, video and document only' }),
    ),
    filename: Type.Optional(Type.String({ minLength: 1, maxLength: 240, description: 'document only' })),
  },
  {
    additionalProperties: false,
    description:
      '`{text}` for text; `{url, caption?, filename?}` for image, audio, video, document, sticker; `{}` for a template ' +
      '(a `text` there is accepted and ignored: the template is what is sent)',
  },
);

export const SendBody = Type.Object(
  {
    to: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'recipient: phone number with country code (WhatsApp)',
    }),
    from: Type.String({ minLength: 1, maxLength: 32, description: 'channel type of channel_uuid, e.g. whatsapp' }),
    type: OneOf(MESSAGE_TYPES),
    content: MessageContent,
    channel_uuid: Uuid,
    template_uuid: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'sends this template (with type template, or text); content.text is then ignored',
      }),
    ),
    template_values: Type.Optional(
      Type.Array(Type.String({ maxLength: 1024 }), {
        maxItems: 50,
        description: "values of the template's variables, in the order they first appear",
      }),
    ),
    optin_contact: Type.Optional(Type.Boolean()),
    assigned_user: Type.Optional(
      Type.String({ minLength: 1, maxLength: 320, description: 'email of a user of the business' }),
    ),
    team_uuid: Type.Optional(Uuid),
    fields: Type.Optional(
      Type.String({
        maxLength: 100,
        pattern: '^(contact|conversation)(,(contact|conversation))*$',
        description: 'comma-separated: contact, conversation',
      }),
    ),
    bot_status: Type.Optional(Type.Union([Type.Literal('bot_start'), Type.Literal('bot_end')])),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
        maxProperties: 10,
        propertyNames: { minLength: 1, maxLength: 50 },
        description: 'at most 10 pairs; keys up to 50 characters, values up to 500',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SendBody = Static<typeof SendBody>;

export const SendConversation = Type.Object({
  id: Uuid,
  platform: Type.String(),
  channel_id: Nullable(Uuid),
  created_at: Type.String(),
  last_message_at: Nullable(Type.String()),
  message_count: Type.Integer(),
  closed_at: Nullable(Type.String()),
  manual_control: Type.Boolean({ description: 'true while people, not the AI agent, answer (bot_end)' }),
  assigned_user: Nullable(Type.String(), { description: 'email of the assigned user' }),
  team_uuid: Nullable(Uuid),
  agent_id: Nullable(Uuid),
});
export type SendConversation = Static<typeof SendConversation>;

export const SendResponse = Type.Object({
  message: Type.Object({ uuid: Uuid, status: Type.Literal('enqueued') }),
  contact: Type.Optional(ContactCamel),
  conversation: Type.Optional(SendConversation),
});

export const MessageStatusResponse = Type.Object({
  message: Type.Object({
    uuid: Uuid,
    status: Type.String({ description: 'enqueued (queued, PENDING), sent, delivered, read or failed' }),
    error: Nullable(Type.String(), {
      description:
        'an extension: when failed, why; while enqueued, why the last attempt failed (the send is retried), ' +
        'null before any attempt failed and once sent',
    }),
    attempts: Type.Integer({
      minimum: 0,
      description:
        'an extension: attempts to hand the message to the provider so far (0 while it waits for its first; ' +
        'a failed send is retried with backoff up to 10 attempts)',
    }),
    messageStatusPayload: Type.Object({
      id: Uuid,
      type: Type.String({ description: 'same as status' }),
      payload: Type.Object({
        type: Type.Union([Type.Literal('session'), Type.Literal('template')]),
        whatsappMessageId: Nullable(Type.String(), {
          description: "the provider's message id; null until the provider accepted it",
        }),
      }),
      destination: Type.String({ description: 'recipient address' }),
    }),
  }),
});

export const SendTemplateQuery = Type.Object(
  {
    template_id: Uuid,
    from_phone_number: Type.String({
      pattern: '^[0-9]{6,15}$',
      description: 'business number, digits with country code',
    }),
    agent_id: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type SendTemplateQuery = Static<typeof SendTemplateQuery>;

export const TemplateButtonValue = Type.Object(
  {
    index: Type.Integer({ minimum: 0, maximum: 9, description: "the button's position in the template" }),
    sub_type: Type.Literal('url'),
    text: Type.String({ minLength: 1, maxLength: 2000, description: "replaces the URL button's {{1}}" }),
  },
  { additionalProperties: false },
);

// Variables travel as extra body fields (the contract), so this body alone admits unknown keys.
export const SendTemplateBody = Type.Object(
  {
    phone: Type.String({ pattern: '^\\+?[0-9]{6,15}$', description: 'recipient, digits with country code' }),
    buttons: Type.Optional(Type.Array(TemplateButtonValue, { maxItems: 10 })),
  },
  {
    additionalProperties: Type.Unknown(),
    maxProperties: 102,
    description:
      "phone, buttons, and the template's variables: numeric keys (1, 2, ...) positional, named keys named, each a string " +
      '(up to 1024 characters), a number or a boolean (400 otherwise); other fields are ignored, whatever they hold',
  },
);
export type SendTemplateBody = Static<typeof SendTemplateBody>;

export const SendTemplateResponse = Type.Object({
  success: Type.Boolean(),
  message_id: Uuid,
  recipient: Type.String(),
  template_name: Type.String(),
});
