import type { InboundMessage, ProviderErrorDetail } from '../../channels/provider.ts';
import { newId } from '../../lib/ids.ts';
import type { ChannelRow } from '../channels/channels.service.ts';
import type { NewMessage } from '../messages/messages.repository.ts';

/**
 * The structured parts of an inbound message, kept in `messages.metadata` (snake_case) so later
 * readers (webhooks: messageLocation, ...) need not parse the provider's notification again.
 * Only the parts the message has are written.
 */
export function inboundMetadata(message: InboundMessage, reactionTargetId: string | null): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  if (message.type === 'unsupported') meta.provider_type = message.providerType;
  if (message.location) meta.location = message.location;
  if (message.contacts.length > 0) {
    meta.contacts = message.contacts.map((card) => ({
      formatted_name: card.formattedName,
      first_name: card.firstName,
      last_name: card.lastName,
      organization: card.organization,
      phones: card.phones.map((p) => ({ phone: p.phone, wa_id: p.waId, type: p.type })),
      emails: card.emails,
      urls: card.urls,
    }));
  }
  if (message.interactive) {
    const { kind, id, title, description } = message.interactive;
    meta.interactive = { type: kind, id, title, description };
  }
  if (message.button) meta.button = message.button;
  if (message.reaction) {
    meta.reaction = {
      message_id: reactionTargetId,
      provider_message_id: message.reaction.providerMessageId,
      emoji: message.reaction.emoji,
    };
  }
  if (message.media?.voice !== undefined) meta.voice = message.media.voice;
  if (message.media?.animated !== undefined) meta.animated = message.media.animated;
  if (message.context?.replyToProviderMessageId)
    meta.reply_to_provider_message_id = message.context.replyToProviderMessageId;
  if (message.context?.forwarded) meta.forwarded = true;
  if (message.context?.frequentlyForwarded) meta.frequently_forwarded = true;
  if (message.errors.length > 0) meta.errors = message.errors;
  if (message.subject) meta.subject = message.subject;
  if (message.references && message.references.length > 0) meta.references = message.references;
  if (message.fullText !== undefined) meta.full_text = message.fullText;
  if (message.automated) meta.automated = true;
  if (message.handedOver) meta.handed_over = true;
  if (message.details) Object.assign(meta, message.details);
  return meta;
}

/** A provider's errors as the one line stored in `messages.error`: "code: title - details; ...". */
export function errorText(errors: ProviderErrorDetail[]): string {
  if (errors.length === 0) return 'failed: the provider reported a failure without detail';
  return errors
    .map((e) => {
      const parts = [...new Set([e.title, e.message, e.details].filter((p): p is string => p !== null && p !== ''))];
      return parts.length > 0 ? `${e.code}: ${parts.join(' - ')}` : e.code;
    })
    .join('; ');
}

/**
 * The stored row of an inbound message (storeMessages). An echo (a message the business's account
 * sent from elsewhere) is stored as outbound, sent by a person of the business outside this service.
 */
export function inboundMessageRow(
  businessId: string,
  channel: ChannelRow,
  message: InboundMessage,
  to: { conversationId: string; contactId: string; replyToId: string | null; reactionTargetId: string | null },
): NewMessage & { id: string } {
  return {
    business_id: businessId,
    id: newId(),
    conversation_id: to.conversationId,
    contact_id: to.contactId,
    channel: channel.type,
    channel_id: channel.id,
    provider_message_id: message.providerMessageId,
    direction: message.echo ? 'outbound' : 'inbound',
    sender_type: message.echo ? 'human' : 'contact',
    type: message.type,
    text: message.text ?? '',
    // A message still arriving (a call) is PENDING until its end is told (inbound.updates.ts).
    status: message.echo ? 'SENT' : message.arriving ? 'PENDING' : 'RECEIVED',
    status_at: message.timestamp,
    reply_to_id: to.replyToId,
    metadata: inboundMetadata(message, to.reactionTargetId),
    sender_address: message.echo ? channel.identifier : message.from,
    recipient_address: message.echo ? message.from : channel.identifier,
    created_at: message.timestamp,
  };
}
