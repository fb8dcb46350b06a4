import type { WebhookNotification } from './channel-kind.ts';
import type {
  ChannelLink,
  ErrorClassification,
  FetchedMedia,
  FetchedProfile,
  IncomingHeaders,
  MirroredMessage,
  ParsedNotification,
  SendRequest,
  SendResult,
} from './channel.types.ts';

export type * from './channel.types.ts';
export { ProviderError } from './provider-error.ts';
export { canMoveStatus, messageStatusOf, type MessageStatus } from './message-status.ts';

/**
 * One channel provider (WhatsApp Cloud API, later Instagram, SMS, ...). The messaging module talks
 * only to this interface; an adapter translates it to its vendor's wire format.
 */
export interface ChannelProvider {
  /** The provider kind this adapter implements, e.g. `whatsapp_cloud`. */
  readonly kind: string;

  /**
   * Send one message. Resolves with the provider's message id once the provider accepted it;
   * rejects with a {@link ProviderError} (or a network error) otherwise: pass it to `classifyError`.
   * Must call `request.beforeSend` once its connection is open and write nothing of the request
   * before it resolves (nothing at all if it rejects): the core's guarantee that a message is never
   * sent twice rests on it.
   */
  send(request: SendRequest): Promise<SendResult>;

  /**
   * Whether the notification's signature header matches the raw request bytes (constant time), for
   * a kind notified by webhook (its transport, channel-kind.ts, reads the body). Must run on the
   * bytes as received, before any JSON parsing or re-serialisation. `path` is the request's path and
   * query, for providers that sign the URL they called too (with the service's public address).
   */
  verifySignature(rawBody: Buffer, headers: IncomingHeaders, path?: string): boolean;

  /**
   * The body answering an accepted notification addressed to this channel (in the transport's
   * `answer.contentType`), for a provider that is told what to do next in the answer (a call's
   * instructions): read from the notification, the request URL's `query` and the channel's config.
   * Undefined: the transport's fixed `answer.body`.
   */
  answerNotification?(notification: WebhookNotification, query: Record<string, string>): string | undefined;

  /**
   * Answer the provider's subscription handshake (Meta's `hub.challenge`): the text to echo back,
   * or null to refuse. Providers without a handshake leave it out.
   */
  verifySubscription?(query: Record<string, unknown>): string | null;

  /**
   * For a kind whose people connect themselves (SocketTransport: the website widget): whether a
   * browser of this `Origin` may open the channel's sessions.
   */
  admitsOrigin?(origin: string): boolean;

  /**
   * For a kind whose people connect themselves: whether `hash` is the business's signature of this
   * external id (identity validation, constant time); null when the channel takes no identities.
   */
  verifiesIdentity?(externalId: string, hash: string): boolean | null;

  /** For a kind whose people connect themselves: what to tell them when no one of the team is around. */
  awayMessage?(): string | null;

  /** Decide whether a failed `send` or `fetchMedia` may be retried, with the detail to store. */
  classifyError(err: unknown): ErrorClassification;

  /**
   * Download an inbound attachment by the provider's media id; for a kind that mirrors, a file of a
   * relayed reply by its RelayedFile.ref too. Within the media limit (ProviderHttpOptions.maxMediaBytes).
   */
  fetchMedia(mediaId: string): Promise<FetchedMedia>;

  /**
   * For a kind read by polling (PollerTransport), or linked as a device (SocketTransport.linked: the
   * connection is held while it runs, with `options.link`): reads the messages that came after `cursor` (null:
   * the first run, which starts at what comes next and stores that cursor at once) and hands each
   * batch to `store` with the cursor after it, waiting for `store` before reading on, until `signal`
   * aborts (resolves then) or the connection fails (rejects; the poller starts it again later).
   * `store` commits the messages and the cursor together: a restart reads on from the last batch stored.
   */
  watch?(cursor: PollCursor | null, store: (batch: PolledBatch) => Promise<void>, options: WatchOptions): Promise<void>;

  /**
   * The name of the person at an address (an inbound sender), for providers whose notifications
   * carry none (Messenger, Instagram): null when the provider gives no name. Called once per new
   * contact, after its message is stored; a failure changes nothing.
   */
  fetchProfile?(address: string): Promise<FetchedProfile | null>;

  /**
   * Download the picture a profile named (`FetchedProfile.avatar`), with the channel's credentials
   * where the provider needs them, refusing a body over `maxBytes` (ProviderError, not retryable).
   * A failure is classified by `classifyError`.
   */
  fetchAvatar?(avatar: string, limits: { maxBytes: number }): Promise<FetchedMedia>;

  /**
   * For a kind that mirrors the business's other channels (ChannelCapabilities.mirrors): whether
   * the channel copies the messages of this contract channel type.
   */
  mirrors?(channelType: string): boolean;

  /**
   * Copies one message of another channel to the provider, keyed by the message's id so that a
   * copy tried again after a failure lands once, with its files (MirroredMessage.files) where the
   * provider takes them. Rejects as `send` does (classifyError tells a retry).
   */
  mirror?(message: MirroredMessage): Promise<void>;

  /**
   * Tells the provider how a reply it relayed (RelayedReply, by its key) went out through the
   * conversation's channel: sent, or failed with why. Rejects as `send` does.
   */
  reportRelayed?(key: string, outcome: { sent: true } | { failed: string }): Promise<void>;
}

/** Where a polled channel's reading stands (JSON, the adapter's own; an IMAP mailbox's UIDVALIDITY and last UID). */
export type PollCursor = Record<string, unknown>;

/** What `watch` read, and the cursor once it is stored. */
export interface PolledBatch {
  notification: ParsedNotification;
  cursor: PollCursor;
}

export interface WatchOptions {
  signal: AbortSignal;
  /**
   * Milliseconds between two polls when the provider cannot tell of new messages itself; for a
   * linked kind, between two looks at what the operator asked (ChannelLink.requests).
   */
  intervalMs: number;
  /** For a linked kind: the link's stored credentials and state. */
  link?: ChannelLink;
}
