import type { Selectable } from 'kysely';
import type { MediaTable, MessagesTable } from '../../db/types.ts';
import type { DashboardLinks } from '../../lib/links.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';
import { toContactCamel } from '../contacts/contacts.mappers.ts';
import { signedMediaUrl, type MediaSigningKey } from '../media/media.signing.ts';
import { messageAddresses } from '../messages/message-addresses.ts';
import { messageParts } from '../messages/message-parts.ts';
import type { MessageCreatedPayload } from './webhook-payload.schemas.ts';

type MessageRow = Selectable<MessagesTable>;
type MediaRow = Selectable<MediaTable>;

/** What building a payload needs besides the rows. */
export interface PayloadContext {
  links: DashboardLinks;
  signingKey: MediaSigningKey;
  nowMs: number;
}

/**
 * The optional objects of the payload, from the structured parts the inbound path keeps in
 * `messages.metadata` (messageParts) and from the reply link.
 */
function optionalObjects(message: MessageRow): Partial<MessageCreatedPayload> {
  const parts = messageParts(message.metadata);
  const out: Partial<MessageCreatedPayload> = {};
  const replyProviderId = parts.replyToProviderMessageId;
  if (message.reply_to_id || replyProviderId)
    out.messageContext = { messageId: message.reply_to_id, providerMessageId: replyProviderId };
  if (parts.location) out.messageLocation = parts.location;
  if (parts.contacts.length > 0) {
    out.messageContactCard = {
      contacts: parts.contacts.map((card) => ({
        formattedName: card.formatted_name,
        firstName: card.first_name,
        lastName: card.last_name,
        organization: card.organization,
        phones: card.phones.map((p) => ({ phone: p.phone, waId: p.wa_id, type: p.type })),
        emails: card.emails,
        urls: card.urls,
      })),
    };
  }
  const { interactive, button } = parts;
  if (interactive?.type === 'list_reply') {
    out.messageInteractiveList = {
      id: interactive.id ?? '',
      title: interactive.title,
      description: interactive.description,
    };
  } else if (interactive?.type === 'button_reply') {
    out.messageReplyButton = { id: interactive.id, title: interactive.title, payload: null };
  }
  if (button) out.messageReplyButton = { id: null, title: button.text, payload: button.payload };
  if (parts.forwarded) out.messageForward = { forwarded: true, frequentlyForwarded: parts.frequentlyForwarded };
  return out;
}

/** The `message_created` payload of a stored message, its contact and files, with media addresses signed at `nowMs`. */
export function messageCreatedPayload(
  message: MessageRow,
  contact: ContactRow,
  files: MediaRow[],
  ctx: PayloadContext,
): MessageCreatedPayload {
  const inbound = message.direction === 'inbound';
  const camel = toContactCamel(contact, {
    summary: { latestConversationId: message.conversation_id, closedAt: null },
    assignedUserEmail: null,
    links: ctx.links,
  });
  const media = files.map((file) => {
    // A file the business sent by its own URL is shown as that URL: it is not ours to sign or expire.
    const url =
      file.storage_key === null && file.source_url !== null
        ? file.source_url
        : signedMediaUrl(ctx.signingKey, file.business_id, file.id, ctx.nowMs).url;
    return { id: file.id, url, filename: file.filename, contentType: file.content_type };
  });
  return {
    messageId: message.id,
    conversationId: message.conversation_id,
    type: message.type,
    // Messages that fire message_created (inbound, sent through the API) carry both addresses.
    ...messageAddresses(message, contact),
    text: message.text,
    attachments: media.map((m) => m.url),
    media,
    status: inbound ? 'received' : 'sent',
    channel: message.channel,
    contact: {
      uuid: camel.uuid,
      name: camel.name,
      phoneNumber: camel.phoneNumber,
      avatarUrl: camel.avatarUrl,
      createdAt: camel.createdAt,
      source: camel.source,
      href: camel.href,
      conversationHref: camel.conversationHref,
      tags: camel.tags,
    },
    createdAt: message.created_at,
    metadata: message.metadata,
    ...optionalObjects(message),
  };
}
