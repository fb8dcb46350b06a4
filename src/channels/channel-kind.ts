import type { Static, TObject } from 'typebox';
import type { ChannelAddress } from './addresses.ts';
import type { ChannelType } from './channel-types.ts';
import type { MediaKind, ParsedNotification, RelayedReply } from './channel.types.ts';
import type { CredentialStore } from './credential-store.ts';
import type { ProviderHttpOptions } from './http-deps.ts';
import type { ChannelProvider } from './provider.ts';

/** A field of a kind's config. */
type ConfigField<Schema extends TObject> = keyof Static<Schema> & string;

/** A field of a kind's config, or one of a nested object's (`smtp.password`). */
type ConfigPath<Schema extends TObject> = ConfigField<Schema> | `${ConfigField<Schema>}.${string}`;

/** What a channel kind can do, as data the core reads instead of asking which provider it is. */
export interface ChannelCapabilities {
  /**
   * Hours after a person's last message during which free-form messages may be sent (outside it,
   * templates only); null when the channel has no such window.
   */
  serviceWindowHours: number | null;
  /**
   * Hours after a person's last message during which a person of the business (the dashboard's
   * reply box) may still write free-form, past `serviceWindowHours` (Messenger's HUMAN_AGENT tag:
   * 168); absent when people have the standard window too.
   */
  humanWindowHours?: number;
  /**
   * Whether the provider's notifications carry no sender name, which its adapter looks up
   * (ChannelProvider.fetchProfile): once for each contact its messages create.
   */
  senderProfiles?: boolean;
  /** Whether the provider sends pre-approved templates. */
  templates: boolean;
  /** Messages per second a new channel of this kind is paced at unless its operator says otherwise. */
  defaultPacePerSecond: number;
  /** Media kinds the provider sends by URL and receives as attachments. */
  mediaKinds: readonly MediaKind[];
  /**
   * Whether the channel only receives (phone calls): every send on it answers 400
   * `channel_receive_only`, and the AI agent answers none of its messages.
   */
  receiveOnly?: boolean;
  /**
   * Whether a send carries the conversation's thread (SendRequest.thread: the latest inbound
   * message's id, references and subject), for a provider that threads by headers (email).
   */
  threads?: boolean;
  /**
   * Whether the kind's channels copy the messages of the business's other channels to the provider
   * (ChannelProvider.mirror), and relay the replies written there (WebhookNotification.relayed).
   */
  mirrors?: boolean;
}

/** One notification read once: the provider accounts it is addressed to, and what it carries. */
export interface WebhookNotification {
  accounts: string[];
  notification: ParsedNotification;
  /** Replies written in the provider, to be sent through their conversations' own channels. */
  relayed?: RelayedReply[];
}

/** How the route documents a webhook (OpenAPI), in the provider's own words. */
export interface WebhookDocs {
  receive: { summary: string; description: string };
  handshake?: { summary: string; description: string };
}

/**
 * Notifications the provider posts to `/channels/<kind>/webhook` (generic route, inbound.routes.ts).
 * The signature of the raw bytes and the handshake's answer need a channel's secrets, so the
 * channel's adapter checks them (ChannelProvider.verifySignature, verifySubscription); the transport
 * says how a body names its channels.
 */
export interface WebhookTransport {
  readonly type: 'webhook';
  /** Other path segments the route answers under besides the kind (`/channels/<alias>/webhook`). */
  readonly aliases: readonly string[];
  /**
   * The body's parameters from its raw bytes, for a provider that does not post JSON (form-encoded
   * bodies, say); JSON when absent. Throws on a body it cannot read.
   */
  parse?(raw: Buffer): unknown;
  /**
   * What the route answers an accepted notification with, when the provider expects more than JSON.
   * `body` is the fixed answer; an adapter whose answer depends on the notification and on its
   * channel's config (the instructions for a call) gives it instead (ChannelProvider.answerNotification).
   */
  readonly answer?: { contentType: string; body: string };
  /**
   * The body as parsed (JSON, or what `parse` made of it), walked once: the accounts it is for
   * (each must be a channel's, and signed by it) and its messages and receipts. `query` holds the
   * request URL's parameters, for a provider that calls back the URL a send gave it (a reference
   * put there). Throws ProviderError `invalid_notification` when the body is not a notification of
   * this provider.
   */
  read(body: unknown, query: Record<string, string>): WebhookNotification;
  /** Refusal messages (401) in the provider's words: an account no channel holds, a wrong signature. */
  readonly refusals: { unknownAccount: string; badSignature: string };
  /**
   * The subscription handshake (GET), when the provider has one: the query it sends, and the
   * secret field of the channel config that names the channel (found by its digest).
   */
  readonly handshake?: { query: TObject; lookupField: string; token(query: Record<string, unknown>): unknown };
  readonly docs: WebhookDocs;
}

/**
 * A provider the service reads from (an IMAP mailbox): the poller (src/modules/inbound/inbound.poller.ts)
 * keeps one adapter's `watch` running per channel, in one process at a time, and stores what it
 * reads through the inbound service with the adapter's cursor, in one transaction.
 */
export interface PollerTransport {
  readonly type: 'poller';
  /** Milliseconds between two polls of one channel, when the provider cannot tell of new messages itself. */
  readonly intervalMs: number;
}

/**
 * A provider over a held connection: the people connect to the service (the website widget), or,
 * `linked`, the service connects to the provider as a device linked to the business's account
 * (WhatsApp Web). A linked kind's connection is held like a poller's reading: the inbound poller
 * keeps one adapter's `watch` running per channel, in the one process holding the channel's lease,
 * with the link's stored credentials (WatchOptions.link).
 */
export interface SocketTransport {
  readonly type: 'socket';
  readonly linked?: {
    /** Milliseconds between two looks at what the operator asked (to link again, a pairing code). */
    readonly intervalMs: number;
  };
}

/** How a channel kind's messages and receipts come in. */
export type InboundTransport = WebhookTransport | PollerTransport | SocketTransport;

/**
 * A provider kind as data: everything the core needs to know of it. An adapter folder exports one
 * (`<provider>.kind.ts`) and registry.ts lists it; nothing else in the core names a provider.
 */
export interface ChannelKind<Kind extends string = string, Schema extends TObject = TObject> {
  /** The `provider.kind` of a channel's config, e.g. `whatsapp_cloud`. */
  readonly kind: Kind;
  /** The channel's `provider` object (validates create bodies; its `kind` is the literal above). */
  readonly schema: Schema;
  /**
   * The adapter for one channel's (opened) config. Every request it makes goes through
   * `http.dispatcher`, which the core builds with the outbound address policy. `credentials` is
   * where a kind with `renewedFields` writes the secrets it renews (absent outside the service).
   */
  create(config: Static<Schema>, http?: ProviderHttpOptions, credentials?: CredentialStore): ChannelProvider;
  /** Config fields stored sealed (channel-secrets.ts), top-level or in a nested object (`smtp.password`). */
  readonly secretFields: readonly ConfigPath<Schema>[];
  /** Secret fields the operator may replace (PATCH's `provider`). */
  readonly rotatingFields: readonly ConfigField<Schema>[];
  /** Non-secret fields the operator may replace too (an API base URL, say). */
  readonly changeableFields: readonly ConfigField<Schema>[];
  /**
   * Non-secret fields holding a URL the adapter calls with the channel's secrets (an API base URL):
   * held to the outbound address policy when set (http(s), no credentials, no literal private
   * address unless allowed), and shown without credentials.
   */
  readonly urlFields: readonly ConfigField<Schema>[];
  /**
   * Fields holding a host name the adapter connects to outside HTTP with the channel's secrets (an
   * SMTP server, `smtp.host`): a literal private address is refused when set (unless allowed), as
   * for urlFields, and the adapter connects through ProviderHttpOptions.resolveHost.
   */
  readonly hostFields?: readonly ConfigPath<Schema>[];
  /**
   * Fields the adapter renews itself and writes through its CredentialStore (an OAuth access token,
   * its refresh token and expiry), secret or not; no others may be written that way.
   */
  readonly renewedFields?: readonly ConfigField<Schema>[];
  /** Secret fields a channel is found by (through their digests; the handshake's token, say). */
  readonly lookupFields: readonly ConfigField<Schema>[];
  /** The config field naming the provider's account, by which notifications find their channel. */
  readonly accountField: ConfigField<Schema>;
  /**
   * The channel's identifier is that account (a page id, a mailbox's address, a sender number):
   * a channel created with another identifier is refused, since its traffic would name another.
   */
  readonly identifierIsAccount?: boolean;
  /** What the dashboard calls the kind: the channel and its vendor's product. */
  readonly title: string;
  /** The contract channel types this kind serves. */
  readonly channelTypes: readonly ChannelType[];
  /** How the channel addresses a person. */
  readonly address: ChannelAddress;
  readonly capabilities: ChannelCapabilities;
  readonly inbound: InboundTransport;
  /**
   * Why the provider would refuse a message's text (too long, say), or null: a send it refuses
   * answers 400 `text_too_long` with this message rather than failing at the provider.
   */
  readonly textRefusal?: (text: string) => string | null;
  /**
   * Why a config its schema accepts is still not one (a field that another field's value requires),
   * or null: creating or updating such a channel answers 400 with this message, at `path` (a JSON
   * pointer into the provider object, `/forward_to`).
   */
  configRefusal?(config: Static<Schema>): { message: string; path: string } | null;
  /**
   * The channel type of the account's primary channel, for a kind whose account may be connected
   * twice (a WhatsApp number linked as a device and on the Cloud API too): a channel of this kind
   * whose identifier a channel of that type has as well keeps its conversations in that channel's,
   * so a person has one conversation with the number. Its copies of messages that channel holds are
   * left out of exports (migration 0048).
   */
  readonly primaryChannelType?: ChannelType;
  /** What creating a channel of this kind takes, for the operator API's description (OpenAPI). */
  readonly createDocs: string;
}

/** Checks an entry's shape where it is written, keeping its literal kind and schema types. */
export function defineChannelKind<const Kind extends string, Schema extends TObject>(
  entry: ChannelKind<Kind, Schema>,
): ChannelKind<Kind, Schema> {
  return entry;
}
