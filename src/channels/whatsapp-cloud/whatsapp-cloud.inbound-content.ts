import type { ContactCard, MediaKind } from '../channel.types.ts';
import { emptyContent, type InboundContent } from '../inbound-content.ts';
import { array, num, object, str, type Json } from '../meta/meta.read.ts';

const mediaKinds = new Set<string>(['image', 'audio', 'video', 'document', 'sticker']);

/**
 * The typed part of an inbound message. A type we do not read, or a known type whose object is
 * missing its required fields, becomes `unsupported` (the message is still stored once).
 */
export function parseContent(raw: Json, providerType: string): InboundContent {
  const part = object(raw[providerType]);
  if (mediaKinds.has(providerType)) {
    const id = str(part?.id);
    if (!part || !id) return emptyContent('unsupported');
    const caption = str(part.caption);
    return {
      ...emptyContent(providerType as MediaKind),
      text: caption,
      media: {
        providerMediaId: id,
        mimeType: str(part.mime_type),
        sha256: str(part.sha256),
        filename: str(part.filename),
        caption,
        ...(typeof part.voice === 'boolean' ? { voice: part.voice } : {}),
        ...(typeof part.animated === 'boolean' ? { animated: part.animated } : {}),
      },
    };
  }
  switch (providerType) {
    case 'text': {
      const body = typeof part?.body === 'string' ? part.body : null;
      return body === null ? emptyContent('unsupported') : { ...emptyContent('text'), text: body };
    }
    case 'location': {
      const latitude = num(part?.latitude);
      const longitude = num(part?.longitude);
      if (!part || latitude === null || longitude === null) return emptyContent('unsupported');
      const location = { latitude, longitude, name: str(part.name), address: str(part.address), url: str(part.url) };
      return { ...emptyContent('location'), location };
    }
    case 'contacts':
      return { ...emptyContent('contacts'), contacts: array(raw.contacts).map(contactCard) };
    case 'interactive':
      return interactive(part);
    case 'button': {
      const text = str(part?.text);
      if (!text) return emptyContent('unsupported');
      return { ...emptyContent('button'), text, button: { text, payload: str(part?.payload) } };
    }
    case 'reaction': {
      const messageId = str(part?.message_id);
      if (!messageId) return emptyContent('unsupported');
      return { ...emptyContent('reaction'), reaction: { providerMessageId: messageId, emoji: str(part?.emoji) } };
    }
    default:
      return emptyContent('unsupported');
  }
}

function interactive(part: Json | null): InboundContent {
  const kind = str(part?.type);
  // Flow answers (nfm_reply) and other interactive kinds are not modelled yet.
  if (kind !== 'button_reply' && kind !== 'list_reply') return emptyContent('unsupported');
  const reply = object(part?.[kind]);
  const id = str(reply?.id);
  const title = str(reply?.title);
  if (!id || !title) return emptyContent('unsupported');
  return {
    ...emptyContent('interactive'),
    text: title,
    interactive: { kind, id, title, description: str(reply?.description) },
  };
}

function contactCard(card: Json): ContactCard {
  const name = object(card.name);
  return {
    formattedName: str(name?.formatted_name),
    firstName: str(name?.first_name),
    lastName: str(name?.last_name),
    organization: str(object(card.org)?.company),
    phones: array(card.phones).flatMap((p) => {
      const phone = str(p.phone) ?? str(p.wa_id);
      return phone ? [{ phone, waId: str(p.wa_id), type: str(p.type) }] : [];
    }),
    emails: array(card.emails).flatMap((e) => {
      const email = str(e.email);
      return email ? [{ email, type: str(e.type) }] : [];
    }),
    urls: array(card.urls).flatMap((u) => str(u.url) ?? []),
  };
}
