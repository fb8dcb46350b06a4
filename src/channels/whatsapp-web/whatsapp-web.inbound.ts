import {
  isJidGroup,
  isJidStatusBroadcast,
  isJidNewsletter,
  isLidUser,
  jidDecode,
  proto,
  type MessageUserReceiptUpdate,
  type WAMessage,
  type WAMessageUpdate,
} from 'baileys';
import type {
  InboundMedia,
  InboundMessage,
  InboundMessageType,
  MediaKind,
  ProviderDeliveryStatus,
  StatusUpdate,
} from '../channel.types.ts';
import { storableText } from '../../lib/json-check.ts';

/** Seconds since the epoch (a number, or protobuf's Long) as ISO 8601 with microseconds; now when absent. */
export function isoFromSeconds(value: unknown): string {
  const seconds =
    typeof value === 'number' ? value : Number((value as { toString?: () => string } | null)?.toString?.());
  const date = Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date();
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * The person's address of a chat's id: the phone number of `<number>@s.whatsapp.net`. A chat
 * named by its LID (`<lid>@lid`, WhatsApp's hidden ids) is named by the phone number WhatsApp gave
 * beside it (`remoteJidAlt`, `senderPn`) when it did, else by the LID itself.
 */
export function addressOf(
  jid: string | null | undefined,
  alternatives: (string | null | undefined)[] = [],
): string | null {
  if (!jid) return null;
  if (isLidUser(jid)) {
    const phone = alternatives.find((alt) => alt && !isLidUser(alt) && jidDecode(alt)?.server === 's.whatsapp.net');
    return phone ? (jidDecode(phone)?.user ?? null) : `${jidDecode(jid)?.user ?? jid}@lid`;
  }
  const decoded = jidDecode(jid);
  return decoded?.server === 's.whatsapp.net' ? decoded.user : null;
}

/** The chat id a send goes to: a phone number's, or a LID kept as the address. */
export function jidOf(address: string): string {
  return address.endsWith('@lid') ? address : `${address.replace(/\D/g, '')}@s.whatsapp.net`;
}

/** Whether a chat is one person's (not a group, a status broadcast or a channel). */
function isPersonChat(jid: string | null | undefined): jid is string {
  return !!jid && !isJidGroup(jid) && !isJidStatusBroadcast(jid) && !isJidNewsletter(jid);
}

/** The message inside the wrappers WhatsApp puts around some (disappearing, view once, captioned document). */
function unwrap(message: proto.IMessage | null | undefined): proto.IMessage | null {
  let inner = message ?? null;
  for (let depth = 0; inner && depth < 4; depth++) {
    const next =
      inner.ephemeralMessage?.message ??
      inner.viewOnceMessage?.message ??
      inner.viewOnceMessageV2?.message ??
      inner.viewOnceMessageV2Extension?.message ??
      inner.documentWithCaptionMessage?.message;
    if (!next) break;
    inner = next;
  }
  return inner;
}

/** What a media message needs to be downloaded later, in any process: WhatsApp's path and the file's key. */
interface MediaReference {
  /** Baileys' media type of the download (`image`, `audio`, ...). */
  t: 'image' | 'video' | 'audio' | 'document' | 'sticker';
  k: string;
  p: string;
  u: string | null;
  /** The file's type as the message named it. */
  m: string | null;
}

const MEDIA_ID_PREFIX = 'wamedia.';

/**
 * The media id of an inbound file: its download reference, encoded. The file's key decrypts only
 * this file, as readable as the message's own text stored beside it; nothing of the link is in it.
 */
export function mediaIdOf(reference: MediaReference): string {
  return MEDIA_ID_PREFIX + Buffer.from(JSON.stringify(reference)).toString('base64url');
}

/** The download reference of a media id, or undefined for one this adapter did not make. */
export function mediaReferenceOf(mediaId: string): MediaReference | undefined {
  if (!mediaId.startsWith(MEDIA_ID_PREFIX)) return undefined;
  try {
    const value = JSON.parse(Buffer.from(mediaId.slice(MEDIA_ID_PREFIX.length), 'base64url').toString()) as unknown;
    const r = value as Partial<MediaReference>;
    const types = ['image', 'video', 'audio', 'document', 'sticker'];
    if (typeof r.t === 'string' && types.includes(r.t) && typeof r.k === 'string' && typeof r.p === 'string')
      return {
        t: r.t,
        k: r.k,
        p: r.p,
        u: typeof r.u === 'string' ? r.u : null,
        m: typeof r.m === 'string' ? r.m : null,
      };
  } catch {
    // not JSON: not ours
  }
  return undefined;
}

type MediaContent = proto.Message.IImageMessage &
  proto.Message.IVideoMessage &
  proto.Message.IAudioMessage &
  proto.Message.IDocumentMessage &
  proto.Message.IStickerMessage;

/** The media of a message's content, with its kind, or null. */
function mediaOf(content: proto.IMessage): { kind: MediaKind; media: InboundMedia } | null {
  const found: [MediaReference['t'], MediaContent | null | undefined][] = [
    ['image', content.imageMessage],
    ['video', content.videoMessage],
    ['audio', content.audioMessage],
    ['document', content.documentMessage],
    ['sticker', content.stickerMessage],
  ];
  const [type, media] = found.find(([, m]) => m) ?? [];
  if (!type || !media?.mediaKey || !media.directPath) return null;
  return {
    kind: type,
    media: {
      providerMediaId: mediaIdOf({
        t: type,
        k: Buffer.from(media.mediaKey).toString('base64'),
        p: media.directPath,
        u: media.url ?? null,
        m: media.mimetype ?? null,
      }),
      mimeType: media.mimetype ?? null,
      sha256: media.fileSha256 ? Buffer.from(media.fileSha256).toString('base64') : null,
      filename: media.fileName ?? null,
      caption: media.caption ?? null,
      ...(type === 'audio' && media.ptt ? { voice: true } : {}),
      ...(type === 'sticker' && media.isAnimated ? { animated: true } : {}),
    },
  };
}

/**
 * One message of `messages.upsert` as an inbound message of the channel's `account`, or null when
 * it is none of a person's chat (groups, status updates, protocol messages, edits). A message of
 * the business's own phone (`fromMe`) is an echo: the person it went to is `from`.
 */
export function inboundOf(message: WAMessage, account: string): InboundMessage | null {
  const inbound = readInbound(message, account);
  // A webhook body is stored without NUL characters and lone surrogates (PostgreSQL holds neither);
  // an event of the socket is no body, so its strings are made storable here, else the store fails.
  return inbound && storable(inbound);
}

/** The value with each of its strings made storable, objects and arrays walked; anything else as it is. */
function storable<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storable) as T;
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, storable(v)])) as T;
}

function readInbound(message: WAMessage, account: string): InboundMessage | null {
  const { key } = message;
  if (!key.id || !isPersonChat(key.remoteJid)) return null;
  const from = addressOf(key.remoteJid, [key.remoteJidAlt, (key as { senderPn?: string }).senderPn]);
  const content = unwrap(message.message);
  if (!from || !content || content.protocolMessage || content.editedMessage) return null;
  const extended = content.extendedTextMessage;
  const media = mediaOf(content);
  const location = content.locationMessage ?? content.liveLocationMessage;
  const reaction = content.reactionMessage;
  const contextInfo =
    extended?.contextInfo ??
    content.imageMessage?.contextInfo ??
    content.videoMessage?.contextInfo ??
    content.audioMessage?.contextInfo ??
    content.documentMessage?.contextInfo ??
    null;
  let type: InboundMessageType = 'unsupported';
  if (content.conversation || extended?.text) type = 'text';
  else if (media) type = media.kind;
  else if (location) type = 'location';
  else if (reaction?.key?.id) type = 'reaction';
  const text = content.conversation ?? extended?.text ?? media?.media.caption ?? null;
  return {
    providerMessageId: key.id,
    from,
    profileName: key.fromMe ? null : (message.pushName ?? null),
    to: account,
    timestamp: isoFromSeconds(message.messageTimestamp),
    type,
    providerType: Object.keys(content).find((k) => k !== 'messageContextInfo') ?? 'unknown',
    text,
    media: media?.media ?? null,
    location: location
      ? {
          latitude: location.degreesLatitude ?? 0,
          longitude: location.degreesLongitude ?? 0,
          name: (location as proto.Message.ILocationMessage).name ?? null,
          address: (location as proto.Message.ILocationMessage).address ?? null,
          url: (location as proto.Message.ILocationMessage).url ?? null,
        }
      : null,
    contacts: [],
    interactive: null,
    button: null,
    reaction: type === 'reaction' ? { providerMessageId: reaction!.key!.id!, emoji: reaction!.text || null } : null,
    context: contextInfo
      ? {
          replyToProviderMessageId: contextInfo.stanzaId ?? null,
          replyToFrom: contextInfo.participant ? addressOf(contextInfo.participant) : null,
          forwarded: contextInfo.isForwarded ?? false,
          frequentlyForwarded: (contextInfo.forwardingScore ?? 0) > 4,
        }
      : null,
    errors: [],
    ...(key.fromMe ? { echo: true } : {}),
  };
}

const { Status } = proto.WebMessageInfo;

/** A message's status as WhatsApp numbers it, as a delivery status; null for those before the server's. */
function deliveryOf(status: number | null | undefined): ProviderDeliveryStatus | null {
  if (status === Status.ERROR) return 'failed';
  if (status === Status.SERVER_ACK) return 'sent';
  if (status === Status.DELIVERY_ACK) return 'delivered';
  if (status === Status.READ || status === Status.PLAYED) return 'read';
  return null;
}

/** A `messages.update` of a message the business sent, as its receipt; null for other updates. */
export function statusOfUpdate(update: WAMessageUpdate, account: string): StatusUpdate | null {
  const { key } = update;
  const status = deliveryOf(update.update.status);
  const recipient = addressOf(key.remoteJid, [key.remoteJidAlt]);
  if (!key.fromMe || !key.id || !status || !recipient || !isPersonChat(key.remoteJid)) return null;
  return {
    providerMessageId: key.id,
    status,
    timestamp: isoFromSeconds(undefined),
    recipient,
    from: account,
    errors:
      status === 'failed' ? [{ code: 'error', title: 'WhatsApp reported an error', message: null, details: null }] : [],
  };
}

/** A `message-receipt.update` (a read or delivery receipt) as a receipt; null for another's message. */
export function statusOfReceipt(receipt: MessageUserReceiptUpdate, account: string): StatusUpdate | null {
  const { key } = receipt;
  const recipient = addressOf(key.remoteJid, [key.remoteJidAlt]);
  if (!key.fromMe || !key.id || !recipient || !isPersonChat(key.remoteJid)) return null;
  const read = receipt.receipt.readTimestamp ?? receipt.receipt.playedTimestamp;
  const at = read ?? receipt.receipt.receiptTimestamp;
  return {
    providerMessageId: key.id,
    status: read ? 'read' : 'delivered',
    timestamp: isoFromSeconds(at),
    recipient,
    from: account,
    errors: [],
  };
}
