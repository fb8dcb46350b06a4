import type {
  InboundMedia,
  InboundMessage,
  InboundMessageType,
  ParsedNotification,
  ProviderDeliveryStatus,
  StatusUpdate,
} from '../channel.types.ts';
import type { WebhookNotification } from '../channel-kind.ts';
import { emptyContent } from '../inbound-content.ts';
import { ProviderError } from '../provider-error.ts';
import { array, identifier, num, object, str, type Json } from './meta.read.ts';

// Messenger's and Instagram's webhook events (Meta's Messenger Platform): `entry[].messaging[]`,
// `entry[].standby[]` (handover protocol) and, for Instagram's test events from the app dashboard,
// `entry[].changes[].value`. One reader for both products; they differ in the body's `object`.

/** Meta's attachment types and the media kind each is stored as; the others are `unsupported`. */
const attachmentKinds: Record<string, InboundMessageType> = {
  image: 'image',
  video: 'video',
  audio: 'audio',
  file: 'document',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The longest attachment URL kept (Meta's CDN URLs are signed and long). */
const MAX_MEDIA_URL_LENGTH = 4096;

/** One messaging event, as the reader walks it. */
interface Event {
  raw: Json;
  standby: boolean;
}

/** The reader of one product's notifications: its body's `object` (`page`, `instagram`). */
export function metaMessagingReader(object: string, product: string): (body: unknown) => WebhookNotification {
  return (body) => readMessaging(body, object, product);
}

function readMessaging(body: unknown, expectedObject: string, product: string): WebhookNotification {
  const root = object(body);
  if (!root || root.object !== expectedObject || !Array.isArray(root.entry))
    throw new ProviderError('invalid_notification', `not a ${product} notification`, false);
  const result: ParsedNotification = { messages: [], statuses: [], contacts: [] };
  const accounts = new Set<string>();
  for (const { raw, standby } of events(root.entry)) {
    const sender = identifier(object(raw.sender)?.id);
    const recipient = identifier(object(raw.recipient)?.id);
    const message = object(raw.message);
    if (!sender || !recipient) continue;
    // The business's account is the recipient, or the sender of an echo.
    const echo = message?.is_echo === true;
    const account = echo ? sender : recipient;
    const person = echo ? recipient : sender;
    const before = result.messages.length + result.statuses.length;
    readEvent(raw, { account, person, echo, standby }, result);
    if (result.messages.length + result.statuses.length > before) accounts.add(account);
  }
  return { accounts: [...accounts], notification: result };
}

function* events(entries: unknown): Generator<Event> {
  for (const entry of array(entries)) {
    for (const raw of array(entry.messaging)) yield { raw, standby: false };
    for (const raw of array(entry.standby)) yield { raw, standby: true };
    for (const change of array(entry.changes)) {
      const value = object(change.value);
      if (change.field === 'messages' && value) yield { raw: value, standby: false };
    }
  }
}

interface Parties {
  account: string;
  person: string;
  echo: boolean;
  standby: boolean;
}

function readEvent(raw: Json, parties: Parties, result: ParsedNotification): void {
  const timestamp = isoFromMetaTime(raw.timestamp);
  const delivery = object(raw.delivery);
  const read = object(raw.read);
  if (delivery || read) {
    result.statuses.push(...receipts(delivery ? 'delivered' : 'read', (delivery ?? read)!, parties, timestamp));
    return;
  }
  if (!timestamp) return;
  const base = { from: parties.person, to: parties.account, timestamp, profileName: null };
  const message = object(raw.message);
  const postback = object(raw.postback);
  const reaction = object(raw.reaction);
  const reference = parties.echo ? str(message?.metadata) : null;
  if (message && reference && UUID.test(reference) && identifier(message.mid)) {
    // The echo of a message this service sent (its id rides in `metadata`): a receipt of that send,
    // which finds it even before the send's answer was recorded.
    const { account, person } = parties;
    const mid = identifier(message.mid)!;
    result.statuses.push({
      providerMessageId: mid,
      status: 'sent',
      timestamp,
      recipient: person,
      from: account,
      errors: [],
      reference,
    });
  } else if (message) result.messages.push(...messagesOf(message, base, parties));
  else if (postback) {
    const title = str(postback.title);
    const payload = str(postback.payload);
    const id = identifier(postback.mid) ?? `postback:${parties.person}:${timestamp}`;
    const text = title ?? payload ?? '';
    result.messages.push({
      ...blank(id, 'button', 'postback', base, parties),
      text,
      button: { text, payload },
    });
  } else if (reaction) {
    const target = identifier(reaction.mid);
    if (!target) return;
    const emoji = reaction.action === 'unreact' ? null : (str(reaction.emoji) ?? str(reaction.reaction));
    // A reaction has no id of its own: its target, its sender and its time name it.
    const id = `reaction:${target}:${parties.person}:${timestamp}`;
    result.messages.push({
      ...blank(id, 'reaction', 'reaction', base, parties),
      reaction: { providerMessageId: target, emoji },
    });
  }
}

/** Delivery and read receipts: each `mids` item, and the watermark for every earlier message. */
function receipts(status: ProviderDeliveryStatus, part: Json, parties: Parties, at: string | null): StatusUpdate[] {
  const watermark = isoFromMetaTime(part.watermark);
  const common = { status, recipient: parties.person, from: parties.account, errors: [] };
  const updates: StatusUpdate[] = [];
  // Instagram's read names its message (`read.mid`); Messenger's deliveries name theirs in `mids`.
  const mids: unknown[] = [...(Array.isArray(part.mids) ? (part.mids as unknown[]) : []), part.mid];
  for (const mid of mids.map(identifier)) {
    if (mid && (watermark ?? at)) updates.push({ ...common, providerMessageId: mid, timestamp: (watermark ?? at)! });
  }
  if (watermark) updates.push({ ...common, providerMessageId: '', timestamp: watermark, upTo: true });
  return updates;
}

type Base = Pick<InboundMessage, 'from' | 'to' | 'timestamp' | 'profileName'>;

function blank(
  id: string,
  type: InboundMessageType,
  providerType: string,
  base: Base,
  parties: Parties,
): InboundMessage {
  return {
    ...base,
    providerMessageId: id,
    providerType,
    ...emptyContent(type),
    context: null,
    errors: [],
    ...(parties.echo ? { echo: true } : {}),
    ...(parties.standby ? { handedOver: true } : {}),
  };
}

/**
 * A message event: its text (a quick reply's payload with it), and one message per attachment
 * (the first keeps the message's id, the next `<mid>/<n>`, as one stored message holds one media).
 */
function messagesOf(message: Json, base: Base, parties: Parties): InboundMessage[] {
  const mid = identifier(message.mid);
  if (!mid) return [];
  const text = typeof message.text === 'string' ? message.text : null;
  const replyTo = identifier(object(message.reply_to)?.mid);
  const context = replyTo
    ? { replyToProviderMessageId: replyTo, replyToFrom: null, forwarded: false, frequentlyForwarded: false }
    : null;
  const quickReply = str(object(message.quick_reply)?.payload);
  const attachments = array(message.attachments);
  if (attachments.length === 0) {
    if (quickReply)
      return [
        {
          ...blank(mid, 'button', 'quick_reply', base, parties),
          text,
          button: { text: text ?? '', payload: quickReply },
          context,
        },
      ];
    if (text === null) return [{ ...blank(mid, 'unsupported', 'message', base, parties), context }];
    return [{ ...blank(mid, 'text', 'text', base, parties), text, context }];
  }
  return attachments.map((attachment, n) => {
    const providerType = str(attachment.type) ?? 'attachment';
    const url = str(object(attachment.payload)?.url);
    const type = attachmentKinds[providerType] ?? 'unsupported';
    const id = n === 0 ? mid : `${mid}/${n}`;
    const caption = n === 0 ? text : null;
    if (type === 'unsupported' || !url || url.length > MAX_MEDIA_URL_LENGTH || !/^https?:\/\//.test(url))
      return { ...blank(id, 'unsupported', providerType, base, parties), text: caption, context };
    const media: InboundMedia = { providerMediaId: url, mimeType: null, sha256: null, filename: null, caption };
    return { ...blank(id, type, providerType, base, parties), text: caption, media, context };
  });
}

/**
 * Meta's event times: Unix milliseconds (Messenger, Instagram) or seconds (Instagram's test
 * events, as a string), as ISO 8601 with microseconds; null when absent or out of range.
 */
export function isoFromMetaTime(value: unknown): string | null {
  const n = num(value);
  if (n === null || n < 0) return null;
  const ms = n < 1e11 ? n * 1000 : n;
  if (ms > 253402300799000) return null;
  return new Date(Math.trunc(ms)).toISOString().replace(/Z$/, '000Z');
}
