/**
 * The structured parts of a stored message, read back from `messages.metadata`, where the inbound
 * path keeps them in snake_case (inbound.content.ts). Read in one place for every reader (webhook
 * payloads, the dashboard's thread); a part whose stored shape is not the one written (an import's
 * free-form metadata) is left out.
 */
export interface MessageParts {
  location: {
    latitude: number;
    longitude: number;
    name: string | null;
    address: string | null;
    url: string | null;
  } | null;
  contacts: ContactCardPart[];
  /** The choice made on an interactive message (a list row or a reply button). */
  interactive: {
    type: 'list_reply' | 'button_reply';
    id: string | null;
    title: string;
    description: string | null;
  } | null;
  /** A template's quick-reply button pressed. */
  button: { text: string; payload: string | null } | null;
  /** A reaction to another message (`emoji` null: removed). */
  reaction: { message_id: string | null; emoji: string | null } | null;
  forwarded: boolean;
  frequentlyForwarded: boolean;
  replyToProviderMessageId: string | null;
}

/** A contact card shared in a message. */
export interface ContactCardPart {
  formatted_name: string | null;
  first_name: string | null;
  last_name: string | null;
  organization: string | null;
  phones: { phone: string; wa_id: string | null; type: string | null }[];
  emails: { email: string; type: string | null }[];
  urls: string[];
}

type Meta = Record<string, unknown>;
const obj = (value: unknown): Meta | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Meta) : undefined;
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const objects = (value: unknown): Meta[] =>
  (Array.isArray(value) ? value : []).map(obj).filter((o): o is Meta => o !== undefined);

export function messageParts(metadata: Meta): MessageParts {
  const location = obj(metadata.location);
  const interactive = obj(metadata.interactive);
  const button = obj(metadata.button);
  const reaction = obj(metadata.reaction);
  return {
    location:
      location && typeof location.latitude === 'number' && typeof location.longitude === 'number'
        ? {
            latitude: location.latitude,
            longitude: location.longitude,
            name: str(location.name),
            address: str(location.address),
            url: str(location.url),
          }
        : null,
    contacts: objects(metadata.contacts).map((card) => ({
      formatted_name: str(card.formatted_name),
      first_name: str(card.first_name),
      last_name: str(card.last_name),
      organization: str(card.organization),
      phones: objects(card.phones).map((p) => ({ phone: str(p.phone) ?? '', wa_id: str(p.wa_id), type: str(p.type) })),
      emails: objects(card.emails).map((e) => ({ email: str(e.email) ?? '', type: str(e.type) })),
      urls: (Array.isArray(card.urls) ? card.urls : []).filter((u): u is string => typeof u === 'string'),
    })),
    interactive:
      interactive?.type === 'list_reply' || interactive?.type === 'button_reply'
        ? {
            type: interactive.type,
            id: str(interactive.id),
            title: str(interactive.title) ?? '',
            description: str(interactive.description),
          }
        : null,
    button: button ? { text: str(button.text) ?? '', payload: str(button.payload) } : null,
    reaction: reaction ? { message_id: str(reaction.message_id), emoji: str(reaction.emoji) } : null,
    forwarded: metadata.forwarded === true || metadata.frequently_forwarded === true,
    frequentlyForwarded: metadata.frequently_forwarded === true,
    replyToProviderMessageId: str(metadata.reply_to_provider_message_id),
  };
}
