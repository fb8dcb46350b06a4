// Provider-neutral shapes shared by every channel adapter. Nothing here knows a vendor's wire
// format: adapters translate to and from these types.

/** Media kinds a provider can send by URL and receive as attachments. */
export type MediaKind = 'image' | 'audio' | 'video' | 'document' | 'sticker';

/** One body variable of a template: positional when `name` is absent, named otherwise. */
export interface TemplateParameter {
  /** The placeholder name of a named template (`{{first_name}}` -> `first_name`). */
  name?: string;
  text: string;
}

/** The value of a dynamic URL button; `index` is the button's position as a string ("0"). */
export interface TemplateUrlButtonParameter {
  index: string;
  text: string;
}

/** A template header with a variable: text, or media by URL. */
export type TemplateHeader =
  | { kind: 'text'; parameters: TemplateParameter[] }
  | { kind: 'image' | 'video' | 'document'; url: string; filename?: string };

/**
 * What to send; one variant per kind of outbound content. `extendedWindow`: a person sends it after
 * the standard service window closed, within the kind's longer window for people
 * (ChannelCapabilities.humanWindowHours): the adapter marks it so (Messenger's HUMAN_AGENT tag).
 */
export type OutboundContent =
  | { kind: 'text'; text: string; previewUrl?: boolean; extendedWindow?: boolean }
  | { kind: 'media'; mediaKind: MediaKind; url: string; caption?: string; filename?: string; extendedWindow?: boolean }
  | {
      kind: 'template';
      name: string;
      languageCode: string;
      header?: TemplateHeader;
      bodyParameters?: TemplateParameter[];
      urlButtons?: TemplateUrlButtonParameter[];
    };

/** One outbound message to one recipient. */
export interface SendRequest {
  /** Recipient address as the provider expects it (WhatsApp: digits with country code). */
  to: string;
  content: OutboundContent;
  /** Provider message id this message replies to (quoted in the recipient's app). */
  replyToProviderMessageId?: string;
  /**
   * The service's id of the message, which the provider echoes in its receipts where it can
   * (WhatsApp: `biz_opaque_callback_data`): a receipt then finds its message even when the send's
   * answer was never recorded (StatusUpdate.reference).
   */
  reference?: string;
  /**
   * Called once the connection to the provider is open (name resolved, TCP and TLS done), right
   * before the first byte of the request is written; the request waits for it, and is never written
   * when it rejects. Until it resolves, a failure (or the process dying) means the provider cannot
   * have the message, so the core records there that the call may have reached it (send.job.ts).
   */
  beforeSend?: () => Promise<void>;
  /**
   * The conversation's thread, for a provider that threads by headers (email): the provider id of
   * the conversation's latest inbound message, the ids it referenced, and its subject.
   */
  thread?: SendThread;
}

/** The latest inbound message of a conversation, as a reply to it names it (SendRequest.thread). */
export interface SendThread {
  replyToProviderMessageId: string;
  references: string[];
  subject: string | null;
}

/** What a provider answers when it accepts a message. */
export interface SendResult {
  providerMessageId: string;
  /** The provider's canonical id of the recipient (WhatsApp `wa_id`), when it says. */
  recipientId?: string;
  /** The provider's own acceptance state (WhatsApp `message_status`, e.g. `accepted`), when given. */
  providerStatus?: string;
}

/** An error a provider reports about a message (in a status receipt or an unsupported message). */
export interface ProviderErrorDetail {
  code: string;
  title: string | null;
  message: string | null;
  details: string | null;
}

/** Inbound message kinds; anything a provider sends that we cannot read is `unsupported`. */
export type InboundMessageType =
  'text' | MediaKind | 'location' | 'contacts' | 'interactive' | 'button' | 'reaction' | 'voice' | 'unsupported';

/** Media carried by an inbound message; the bytes are fetched later with `fetchMedia`. */
export interface InboundMedia {
  providerMediaId: string;
  mimeType: string | null;
  sha256: string | null;
  filename: string | null;
  caption: string | null;
  /** Audio recorded as a voice note. */
  voice?: boolean;
  /** Animated sticker. */
  animated?: boolean;
  /**
   * The file is in the service's file store already, under `key` (a file the service received
   * itself, a widget visitor's upload): nothing is fetched.
   */
  stored?: { key: string; size: number };
}

/** A shared location. */
export interface InboundLocation {
  latitude: number;
  longitude: number;
  name: string | null;
  address: string | null;
  url: string | null;
}

/** A contact card shared by the sender. */
export interface ContactCard {
  formattedName: string | null;
  firstName: string | null;
  lastName: string | null;
  organization: string | null;
  phones: { phone: string; waId: string | null; type: string | null }[];
  emails: { email: string; type: string | null }[];
  urls: string[];
}

/** The choice a user made on an interactive message. */
export interface InteractiveReply {
  kind: 'button_reply' | 'list_reply';
  id: string;
  title: string;
  description: string | null;
}

/** A template quick-reply button press. */
export interface ButtonReply {
  text: string;
  payload: string | null;
}

/** A reaction to an earlier message; `emoji` is null when the reaction was removed. */
export interface Reaction {
  providerMessageId: string;
  emoji: string | null;
}

/** Reply and forwarding context of an inbound message. */
export interface InboundContext {
  replyToProviderMessageId: string | null;
  replyToFrom: string | null;
  forwarded: boolean;
  frequentlyForwarded: boolean;
}

/** One inbound message, normalised. */
export interface InboundMessage {
  providerMessageId: string;
  /** Sender address (WhatsApp: the user's wa_id). */
  from: string;
  /** Sender's profile name, when the notification carried one. */
  profileName: string | null;
  /** The business endpoint it was sent to (WhatsApp: phone_number_id). */
  to: string;
  /** ISO 8601, UTC, microseconds. */
  timestamp: string;
  type: InboundMessageType;
  /** The vendor's type name, kept for messages we map to `unsupported`. */
  providerType: string;
  /** Readable text: the body of a text, a media caption, the title of a reply, or null. */
  text: string | null;
  media: InboundMedia | null;
  location: InboundLocation | null;
  contacts: ContactCard[];
  interactive: InteractiveReply | null;
  button: ButtonReply | null;
  reaction: Reaction | null;
  context: InboundContext | null;
  errors: ProviderErrorDetail[];
  /**
   * The provider says this message unsubscribes the sender from the business's messages on this
   * channel type (`stop`: an SMS "STOP") or subscribes them again (`start`).
   */
  optOut?: 'stop' | 'start';
  /**
   * Sent by a machine on the person's behalf (an out-of-office answer, say): stored and shown, but
   * it starts no AI run.
   */
  automated?: boolean;
  /** The message's subject, for a provider that has them (email). */
  subject?: string | null;
  /** Provider ids of the earlier messages of its thread, oldest first (email's References). */
  references?: string[];
  /**
   * The whole text when `text` is only the new part of a reply (email: without the quoted history
   * and signature), kept with the message.
   */
  fullText?: string;
  /**
   * A message the business's own account sent from elsewhere (the provider's inbox, another app),
   * reported back: `from` is the person it went to and `to` the business's account. Stored as an
   * outbound message; one this service sent is recognised by its provider id and not stored again.
   */
  echo?: boolean;
  /**
   * Another app holds the conversation (Meta's handover protocol: the message came on standby): it
   * is stored, and no AI agent answers it.
   */
  handedOver?: boolean;
  /**
   * Still arriving (a phone call, from its ringing to its end): stored PENDING until an
   * InboundUpdate says how it ended.
   */
  arriving?: boolean;
  /** Details kept in the message's metadata, snake_case (a call's status and direction). */
  details?: InboundDetails;
}

/** Details of an inbound message kept in its metadata: flat values under snake_case names. */
export type InboundDetails = Record<string, string | number | boolean | null>;

/**
 * Later news of an inbound message stored before (InboundMessage.arriving: a call), found by its
 * provider id on the channel of `to`. Applied at most once in effect: an end moves the status only
 * from PENDING, details are merged into the metadata, and an attachment is stored only when the
 * message has none with that provider media id.
 */
export interface InboundUpdate {
  providerMessageId: string;
  /** The business endpoint the message came to (the channel's account). */
  to: string;
  /** ISO 8601, UTC, microseconds. */
  timestamp: string;
  /** How it ended: received whole (RECEIVED), or not (ERROR, with `errors`: a missed call). */
  ended?: 'received' | 'failed';
  errors?: ProviderErrorDetail[];
  details?: InboundDetails;
  /** An attachment that came after the message (a call's recording): its bytes are fetched later. */
  media?: InboundMedia;
}

/** Delivery states a provider reports for an outbound message. */
export type ProviderDeliveryStatus = 'sent' | 'delivered' | 'read' | 'failed';

/** A delivery receipt for an outbound message. */
export interface StatusUpdate {
  providerMessageId: string;
  status: ProviderDeliveryStatus;
  /** ISO 8601, UTC, microseconds. */
  timestamp: string;
  recipient: string;
  /** The business endpoint the message was sent from (WhatsApp: phone_number_id). */
  from: string;
  errors: ProviderErrorDetail[];
  /** SendRequest.reference of the message, when the provider echoes it. */
  reference?: string;
  /** The message failed because the recipient unsubscribed from the sender (see ErrorClassification). */
  recipientOptedOut?: boolean;
  /**
   * A watermark (Messenger's deliveries and reads): every outbound message of the channel to
   * `recipient` created at or before `timestamp` has this status; `providerMessageId` is empty.
   */
  upTo?: boolean;
}

/** A sender's profile as the notification names it. */
export interface ContactProfile {
  address: string;
  name: string;
}

/** A person's name and picture as the provider's profile lookup gives them (ChannelProvider.fetchProfile). */
export interface FetchedProfile {
  firstName: string;
  lastName: string;
  /** The person's picture, for `fetchAvatar` (Meta: its signed, short-lived URL); absent when there is none. */
  avatar?: string;
}

/**
 * A message of one of the business's channels, copied to a channel whose provider mirrors the
 * others' conversations (ChannelProvider.mirror): a helpdesk's inbox, say.
 */
export interface MirroredMessage {
  /** The service's id of the message: the provider's idempotency key, so a copy tried again lands once. */
  id: string;
  /** The conversation it belongs to: the provider's thread, which the replies written there name. */
  conversationId: string;
  /** The contract channel type it came through (`whatsapp`, `sms`, ...). */
  channelType: string;
  text: string;
  /** ISO 8601, UTC. */
  createdAt: string;
  /** The person who wrote it: their address, its kind (addresses.ts) and their name when known. */
  sender: { address: string; addressKind: string; name: string | null };
  /** The business's address it was written to (its channel's identifier). */
  to: string;
  /** Its files, in the order they were attached; none for a text. */
  files?: MirroredFile[];
}

/** A file of a mirrored message, from the service's file store. */
export interface MirroredFile {
  /** The service's id of the file (its media id): with the message's id, a name a retry gives again. */
  id: string;
  /** The message's type (`image`, `voice`, `document`, ...), for a provider that labels files by use. */
  kind: string;
  filename: string | null;
  contentType: string;
  size: number;
  /**
   * Reads the stored bytes; absent when the file could not be fetched from the channel it came
   * through, so the provider can say so rather than show nothing.
   */
  read?: () => Promise<Buffer>;
}

/**
 * A reply a person wrote in a provider that mirrors the business's conversations, to be sent
 * through the conversation's own channel (WebhookNotification.relayed).
 */
export interface RelayedReply {
  /** The provider account (the kind's accountField) it came through, whose channel signed the notification. */
  account: string;
  /** The conversation it answers (the thread MirroredMessage.conversationId named). */
  conversationId: string;
  text: string;
  /** The provider's id of the reply: the same reply delivered again is sent once. */
  key: string;
  /** Its files, by the provider's ids (fetched with the relaying channel's `fetchMedia`); none for a text. */
  files?: RelayedFile[];
}

/** A file of a relayed reply, as the provider names it. */
export interface RelayedFile {
  /** The provider's id of the file, which the relaying channel's `fetchMedia` downloads. */
  ref: string;
  /** Its name in the provider, when given. */
  filename: string | null;
}

/** Everything one inbound notification carries. */
export interface ParsedNotification {
  messages: InboundMessage[];
  statuses: StatusUpdate[];
  contacts: ContactProfile[];
  /** Changes of inbound messages stored before (a call's end, its recording). */
  updates?: InboundUpdate[];
}

/** Whether a failed provider call may be tried again, and why it failed. */
export interface ErrorClassification {
  retryable: boolean;
  /**
   * The request may have reached the provider though no answer came back (a timeout or a dropped
   * connection after connecting): retrying may repeat what it did. Safe for a read, not for a send.
   */
  mayHaveArrived?: boolean;
  /**
   * The provider refused the message because the recipient unsubscribed from this sender (replied
   * STOP): later sends to them on this channel type are refused until they opt in again.
   */
  recipientOptedOut?: boolean;
  /**
   * The provider refused the channel's credentials (an expired or revoked access token): the channel
   * is marked as needing new ones until the operator replaces them (no send can succeed meanwhile).
   */
  credentialsRejected?: boolean;
  /** Provider error code (e.g. "131047"), `http_<status>`, `timeout` or `network_error`. */
  code: string;
  /** Human-readable detail worth storing with the message. */
  detail: string;
}

/** Bytes of an inbound attachment. */
export interface FetchedMedia {
  bytes: Buffer;
  mimeType: string;
  /** The file's name at the provider, when it gives one. */
  filename?: string;
  sha256?: string;
  fileSize?: number;
}

/** Request headers as Node and Fastify expose them (lower-case names). */
export type IncomingHeaders = Record<string, string | string[] | undefined>;

/**
 * Where a channel linked as a device stands (a WhatsApp number linked like WhatsApp Web), as the
 * dashboard shows it: not linked, waiting for its QR code (or pairing code) to be used, linked, or
 * logged out from the phone (linked again only when the operator asks).
 */
export type LinkState = 'unlinked' | 'qr' | 'linked' | 'logged_out';

/** What the adapter reports of its link. */
export interface LinkReport {
  state: LinkState;
  /** The QR code's content to link with, while `qr`. */
  qr?: string | null;
  /** The code to type on the phone instead of scanning, when the operator asked for one. */
  pairingCode?: string | null;
  /** The provider's account linked (the phone number), once linked. */
  account?: string | null;
}

/** What the operator asked of a link from the dashboard. */
export interface LinkRequest {
  state: LinkState;
  /** The operator asked to link (again): a link with no credentials starts only then. */
  requested: boolean;
  /** The phone number to show a pairing code for, until the adapter took it. */
  pairingPhone: string | null;
}

/**
 * A linked channel's own storage, kept by the core for its adapter (ChannelProvider.watch): its
 * credentials and keys (each value sealed when stored, any key the adapter chooses), and its state.
 */
export interface ChannelLink {
  /** The values of the keys stored, by key; a key not stored is left out. */
  read(keys: readonly string[]): Promise<Map<string, string>>;
  /** Stores each value, and removes the keys given null. */
  write(entries: ReadonlyMap<string, string | null>): Promise<void>;
  /** Removes every key (the link was logged out). */
  clear(): Promise<void>;
  /** Records the link's state for the dashboard; any state but `qr` answers the operator's request. */
  report(report: LinkReport): Promise<void>;
  /** What the operator asked; a pairing phone is handed over once. */
  requests(): Promise<LinkRequest>;
}
