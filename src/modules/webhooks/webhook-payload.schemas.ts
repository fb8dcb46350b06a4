import { Type, type Static } from 'typebox';
import { Nullable } from '../../http/common.schemas.ts';

const Str = Type.String();
const NullableStr = Nullable(Type.String());

/** Reply context: the message this one answers. */
export const MessageContext = Type.Object(
  {
    messageId: Nullable(Type.String({ format: 'uuid' }), {
      description: 'our id of the message replied to; null when it is unknown to the service',
    }),
    providerMessageId: Nullable(Type.String(), {
      description: "the provider's id of the message replied to (WhatsApp: wamid)",
    }),
  },
  { description: 'present when the message is a reply' },
);

export const MessageLocation = Type.Object(
  { latitude: Type.Number(), longitude: Type.Number(), name: NullableStr, address: NullableStr, url: NullableStr },
  { description: 'present when the message shares a location' },
);

export const MessageContactCard = Type.Object(
  {
    contacts: Type.Array(
      Type.Object({
        formattedName: NullableStr,
        firstName: NullableStr,
        lastName: NullableStr,
        organization: NullableStr,
        phones: Type.Array(Type.Object({ phone: Str, waId: NullableStr, type: NullableStr })),
        emails: Type.Array(Type.Object({ email: Str, type: NullableStr })),
        urls: Type.Array(Str),
      }),
    ),
  },
  { description: 'present when the message shares one or more contact cards' },
);

export const MessageInteractiveList = Type.Object(
  { id: Str, title: Str, description: NullableStr },
  { description: 'present when the contact picked a row of an interactive list' },
);

export const MessageReplyButton = Type.Object(
  {
    id: Nullable(Type.String(), { description: 'id of the reply button; null for a template quick reply' }),
    title: Type.String({ description: 'text of the button' }),
    payload: Nullable(Type.String(), { description: 'payload of a template quick-reply button' }),
  },
  { description: 'present when the contact pressed a reply button (interactive or template quick reply)' },
);

export const MessageForward = Type.Object(
  { forwarded: Type.Boolean(), frequentlyForwarded: Type.Boolean() },
  { description: 'present when the message was forwarded' },
);

export const WebhookContact = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  name: Str,
  phoneNumber: Nullable(Type.String(), { description: 'with leading plus sign' }),
  avatarUrl: NullableStr,
  createdAt: Str,
  source: NullableStr,
  href: Type.String({ description: 'dashboard link to the contact' }),
  conversationHref: Type.String({ description: "dashboard link to the message's conversation" }),
  tags: Type.Array(Str),
});

export const WebhookMedia = Type.Object({
  id: Type.Integer({ description: 'renew an expired url with GET /external/v2/media/:id' }),
  url: Type.String({
    description:
      'signed address, valid 120 minutes from when the delivery was created (a file the business sent by URL: that URL)',
  }),
  filename: NullableStr,
  contentType: NullableStr,
});

export const MessageCreatedPayload = Type.Object({
  messageId: Type.String({ format: 'uuid', description: 'extension: id of the message (GET /messages `id`)' }),
  conversationId: Type.String({ format: 'uuid', description: 'extension: id of its conversation' }),
  type: Type.String({ description: 'extension: message type (text, image, location, template, ...)' }),
  to: Type.String({ description: 'channel-specific recipient identifier' }),
  from: Type.String({ description: 'channel-specific sender identifier' }),
  text: Str,
  attachments: Type.Array(Str, {
    description: 'signed download addresses (expire after 120 minutes; retries reuse them)',
  }),
  media: Type.Array(WebhookMedia),
  status: Type.Union([Type.Literal('received'), Type.Literal('sent')]),
  channel: Str,
  contact: WebhookContact,
  createdAt: Str,
  metadata: Type.Record(Type.String(), Type.Unknown(), {
    description: 'custom message metadata (for inbound messages: what the provider sent besides the text)',
  }),
  messageContext: Type.Optional(MessageContext),
  messageLocation: Type.Optional(MessageLocation),
  messageContactCard: Type.Optional(MessageContactCard),
  messageInteractiveList: Type.Optional(MessageInteractiveList),
  messageReplyButton: Type.Optional(MessageReplyButton),
  messageForward: Type.Optional(MessageForward),
});
export type MessageCreatedPayload = Static<typeof MessageCreatedPayload>;

/** The body of every call: the OpenAPI document lists it under `webhooks.message_created`. */
export const MessageCreatedBody = Type.Object({
  event: Type.Literal('message_created'),
  payload: MessageCreatedPayload,
});

/** The `webhooks` section of the OpenAPI document: what our calls to a registered endpoint look like. */
export const openApiWebhooks = {
  message_created: {
    post: {
      summary: 'message_created (POST or PUT, as registered)',
      description:
        'Sent for every inbound message and every message sent through POST /messages/send or POST /send-template (not for messages people send from the dashboard). ' +
        'Headers: webhook-id, webhook-timestamp, webhook-signature (Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body"> with the whsec_ secret; verify with any Standard Webhooks library), content-type: application/json, plus the custom headers. ' +
        'Answer 2xx within 15 s. The same webhook-id may arrive more than once (at-least-once): dedupe on it.',
      // A plain JSON copy: the document holds JSON Schema, not TypeBox's typed objects.
      requestBody: {
        required: true,
        content: { 'application/json': { schema: JSON.parse(JSON.stringify(MessageCreatedBody)) as object } },
      },
      responses: {
        '200': { description: 'any 2xx marks the delivery done' },
        '410': { description: 'the webhook is disabled' },
      },
    },
  },
};
