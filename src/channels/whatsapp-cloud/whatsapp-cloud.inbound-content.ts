import type { ContactCard, InboundMessage, InboundMessageType, MediaKind } from '../channel.types.ts';
import { array, num, object, str, type Json } from '../meta/meta.read.ts';

type Content = Pick<
  InboundMessage,
  'type' | 'text' | 'media' | 'location' | 'contacts' | 'interactive' | 'button' | 'reaction'
>;

const mediaKinds = new Set<string>(['image', 'audio', 'video', 'document', 'sticker']);

const empty = (type: InboundMessageType): Content => ({
  type,
  text: null,
  media: null,
  location: null,
  contacts: [],
  interactive: null,
  button: null,
  reaction: null,
});

/**
 * The typed part of an inbound message. A type we do not read, or a known type whose object is
 * missing its required fields, becomes `unsupported` (the message is still stored once).
 */
export function parseContent(raw: Json, providerType: string): Content {
  const part = object(raw[providerType]);
  if (mediaKinds.has(providerType)) {
    const id = str(part?.id);
    if (!part || !id) return empty('unsupported');
    const caption = str(part.caption);
    return {
      ...empty(providerType as MediaKind),
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
      return body === null ? empty('unsupported') : { ...empty('text'), text: body };
    }
    case 'location': {
      const latitude = num(part?.latitude);
      const longitude = num(part?.longitude);
      if (!part || latitude === null || longitude === null) return empty('unsupported');
      const location = { latitude, longitude, name: str(part.name), address: str(part.address), url: str(part.url) };
      return { ...empty('location'), location };
    }
    case 'contacts':
      return { ...empty('contacts'), contacts: array(raw.contacts).map(contactCard) };
    case 'interactive':
      return interactive(part);
    case 'button': {
      const text = str(part?.text);
      if (!text) return empty('unsupported');
      return { ...empty('button'), text, button: { text, payload: str(part?.payload) } };
    }
    case 'reaction': {
      const messageId = str(part?.message_id);
      if (!messageId) return empty('unsupported');
      return { ...empty('reaction'), reaction: { providerMessageId: messageId, emoji: str(part?.emoji) } };
    }
    default:
      return empty('unsupported');
  }
}

function interactive(part: Json | null): Content {
  const kind = str(part?.type);
  // Flow answers (nfm_reply) and other interactive kinds are not modelled yet.
  if (kind !== 'button_reply' && kind !== 'list_reply') return empty('unsupported');
  const reply = object(part?.[kind]);
  const id = str(reply?.id);
  const title = str(reply?.title);
  if (!id || !title) return empty('unsupported');
  return {
    ...empty('interactive'),
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
