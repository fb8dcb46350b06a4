import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';

export const CONTACT_MESSAGES_LIMIT_DEFAULT = 100;
export const CONTACT_MESSAGES_LIMIT_MAX = 200;

export const ContactMessagesQuery = Type.Object(
  {
    limit: Type.Integer({
      minimum: 1,
      maximum: CONTACT_MESSAGES_LIMIT_MAX,
      default: CONTACT_MESSAGES_LIMIT_DEFAULT,
      description: 'messages to return',
    }),
  },
  { additionalProperties: false },
);

export const MediaItem = Type.Object({
  id: Type.Integer(),
  url: Type.String({ description: 'signed download address, valid 120 minutes' }),
  filename: Nullable(Type.String()),
  contentType: Nullable(Type.String()),
});

export const ContactMessage = Type.Object({
  uuid: Uuid,
  status: Type.Union([Type.Literal('sent'), Type.Literal('received'), Type.Literal('failed')], {
    description: 'received for inbound, sent for outbound, failed when delivery failed (status ERROR)',
  }),
  channel: Type.String({ description: 'e.g. whatsapp' }),
  createdAt: Timestamp,
  from: Type.String({
    description:
      "inbound: the sender address the channel reported, else the contact (phone digits, or email on the email channel); outbound: the business address, else the identifier of the message's channel (the business's number), empty when no channel is known",
  }),
  to: Type.String({
    description:
      "inbound: the business address the channel reported, else the identifier of the message's channel (the business's number), empty when no channel is known; outbound: the recipient address, else the contact (phone digits, or email on the email channel)",
  }),
  text: Type.String({ description: 'may be empty' }),
  attachments: Type.Array(Type.String(), { description: "signed download addresses of the message's files" }),
  media: Type.Array(MediaItem),
  metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'custom message metadata' }),
});
export type ContactMessage = Static<typeof ContactMessage>;

export const ContactMessages = Type.Object({ messages: Type.Array(ContactMessage, { description: 'newest first' }) });
