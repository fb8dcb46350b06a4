import type { Selectable } from 'kysely';
import type { MediaTable, MessagesTable } from '../../db/types.ts';
import type { DashboardLinks } from '../../lib/links.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';
import { toContactCamel } from '../contacts/contacts.mappers.ts';
import { signedMediaUrl, type MediaSigningKey } from '../media/media.signing.ts';
import { messageAddresses } from '../messages/message-addresses.ts';
import type { MessageCreatedPayload } from './webhook-payload.schemas.ts';

type MessageRow = Selectable<MessagesTable>;
type MediaRow = Selectable<MediaTable>;

/** What building a payload needs besides the rows. */
export interface PayloadContext {
  links: DashboardLinks;
  signingKey: MediaSigningKey;
  nowMs: number;
}

type Meta = Record<string, unknown>;
const obj = (value: unknown): Meta | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Meta) : undefined;
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * The optional objects of the payload, read from the structured parts the inbound path keeps in
 * `messages.metadata` (see inbound.content.ts) and from the reply link.
 */
function optionalObjects(message: MessageRow): Partial<MessageCreatedPayload> {
  const meta = message.metadata;
  const out: Partial<MessageCreatedPayload> = {};
  const replyProviderId = str(meta.reply_to_provider_message_id);
  if (message.reply_to_id || replyProviderId)
    out.messageContext = { messageId: message.reply_to_id, providerMessageId: replyProviderId };
  const location = obj(meta.location);
  if (location && typeof location.latitude === 'number' && typeof location.longitude === 'number') {
    out.messageLocation = {
      latitude: location.latitude,
      longitude: location.longitude,
      name: str(location.name),
      address: str(location.address),
      url: str(location.url),
    };
  }
  const cards = list(meta.contacts)
    .map(obj)
    .filter((c): c is Meta => c !== undefined);
  if (cards.length > 0) {
    out.messageContactCard = {
      contacts: cards.map((card) => ({
        formattedName: str(card.formatted_name),
        firstName: str(card.first_name),
        lastName: str(card.last_name),
        organization: str(card.organization),
        phones: list(card.phones)
          .map(obj)
          .filter((p): p is Meta => p !== undefined)
          .map((p) => ({ phone: str(p.phone) ?? '', waId: str(p.wa_id), type: str(p.type) })),
        emails: list(card.emails)
          .map(obj)
          .filter((e): e is Meta => e !== undefined)
          .map((e) => ({ email: str(e.email) ?? '', type: str(e.type) })),
        urls: list(card.urls).filter((u): u is string => typeof u === 'string'),
      })),
    };
  }
  const interactive = obj(meta.interactive);
  if (interactive?.type === 'list_reply') {
    out.messageInteractiveList = {
      id: str(interactive.id) ?? '',
      title: str(interactive.title) ?? '',
      description: str(interactive.description),
    };
  } else if (interactive?.type === 'button_reply') {
    out.messageReplyButton = { id: str(interactive.id), title: str(interactive.title) ?? '', payload: null };
  }
  const button = obj(meta.button);
  if (button) out.messageReplyButton = { id: null, title: str(button.text) ?? '', payload: str(button.payload) };
  if (meta.forwarded === true || meta.frequently_forwarded === true) {
    out.messageForward = { forwarded: true, frequentlyForwarded: meta.frequently_forwarded === true };
  }
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
