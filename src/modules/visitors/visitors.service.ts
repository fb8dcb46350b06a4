import { createHash, randomUUID } from 'node:crypto';
import type { ChannelProvider, InboundMessage, OutboundContent, ParsedNotification } from '../../channels/provider.ts';
import { channelKind, socketKinds } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { conflict, forbidden, invalid, notFound, unauthorized } from '../../lib/domain-errors.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import type { ChannelRow, ChannelsService } from '../channels/channels.service.ts';
import { contactIdentitiesRepository } from '../contacts/contact-identities.repository.ts';
import type { InboundService } from '../inbound/inbound.service.ts';
import type { LiveEvent } from '../live/live.events.ts';
import type { LiveHub } from '../live/live.hub.ts';
import type { LiveSignal, LiveSignals } from '../live/live.signals.ts';
import type { MediaLink, MediaService } from '../media/media.service.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { sessionsRepository } from '../dashboard-auth/sessions.repository.ts';
import { applyVisitorProfile, normaliseProfile, type VisitorProfile } from './visitor-profile.ts';
import { acceptedUpload, type Upload } from './visitor-uploads.ts';
import { VisitorStreams } from './visitor-streams.ts';
import { VisitorTokens, type VisitorClaims } from './visitor-token.ts';
import { visitorsRepository, type VisitorMessageRow } from './visitors.repository.ts';

/** Messages the widget reads on connect. */
export const HISTORY_SHOWN = 50;

/** A message's file as the widget shows it: a signed address of ours, or the business's own URL. */
export interface VisitorAttachment {
  kind: string;
  url: string;
  filename: string | null;
  content_type: string | null;
}

/** A message as the widget shows it. `client_id`: the widget's id of a message the visitor wrote. */
export interface VisitorMessage {
  id: string;
  client_id: string | null;
  from: 'visitor' | 'business';
  text: string;
  attachments: VisitorAttachment[];
  status: string;
  created_at: string;
}

/** What the site says of a customer signed in to it; `hash` is its server's HMAC of `external_id`. */
export interface VisitorIdentity {
  external_id: string;
  hash: string;
  name?: string;
  email?: string;
  phone?: string;
}

/** What the widget shows besides the messages: whether the team is around, and what to say when not. */
export interface WidgetPresence {
  online: boolean;
  away_message: string | null;
}

/** A team member who used the dashboard this recently counts as online for the widget. */
export const ONLINE_WINDOW_MS = 5 * 60_000;

/** Outbound statuses the widget may show: the send job handed the message over (WebEmbedProvider.send). */
const SHOWN = new Set(['SENT', 'DELIVERED', 'READ']);
const INBOUND_PREFIX = 'v_';
/** Message types that carry a file. */
const FILE_TYPES = new Set(['image', 'video', 'audio', 'document', 'sticker']);

/**
 * The website widget's visitors: their sessions (a signed token per visitor and channel), what
 * they write (stored through the inbound path as any channel's messages), their receipts, their
 * history, and the messages announced for them on the live stream.
 */
export class VisitorsService {
  private readonly tokens: VisitorTokens;
  /** The open streams of this process (their bounds; ended when the server closes). */
  readonly streams = new VisitorStreams();

  constructor(
    private readonly db: Db,
    private readonly channels: ChannelsService,
    private readonly inbound: InboundService,
    private readonly live: Pick<LiveHub, 'watch'>,
    private readonly signals: LiveSignals,
    private readonly media: MediaService,
    private readonly domainEvents: DomainEventDispatcher,
    secretKeys: SecretKeys,
  ) {
    this.tokens = new VisitorTokens(secretKeys);
  }

  /** The widget channel of a public widget id, when `origin` is one of its sites (404, 403 otherwise). */
  async channelFor(
    widgetId: string,
    origin: string | undefined,
  ): Promise<{ channel: ChannelRow; provider: ChannelProvider }> {
    for (const kind of socketKinds()) {
      const channel = await this.channels.findByProviderAccount(kind.kind, widgetId);
      if (!channel) continue;
      const provider = this.channels.providerFor(channel);
      if (origin === undefined || !provider.admitsOrigin?.(origin))
        throw forbidden('origin not allowed for this widget');
      return { channel, provider };
    }
    throw notFound('widget');
  }

  /**
   * A visitor's session: the one its token names (on this channel), a new visitor's, or, with an
   * identity the site signed, the customer's own (the same on every device). A wrong signature is
   * refused, never taken as an unverified visitor.
   */
  async startSession(
    widgetId: string,
    origin: string | undefined,
    body: { token?: string; identity?: VisitorIdentity },
  ): Promise<{ token: string; visitor_id: string; verified: boolean; messages: VisitorMessage[] } & WidgetPresence> {
    const { channel, provider } = await this.channelFor(widgetId, origin);
    let claims: VisitorClaims | undefined;
    if (body.identity) {
      const { external_id: externalId, hash, ...attributes } = body.identity;
      const profile = normaliseProfile(attributes, '/identity');
      const verdict = provider.verifiesIdentity?.(externalId, hash) ?? null;
      if (verdict === null) throw invalid('this widget takes no identities: its channel has no identity_secret');
      if (!verdict) throw unauthorized('identity hash does not match');
      claims = {
        businessId: channel.business_id,
        channelId: channel.id,
        visitorId: verifiedVisitorId(channel.id, externalId),
        verified: true,
        ...(Object.keys(profile).length > 0 ? { profile } : {}),
      };
      // A returning customer's contact takes what the site says of them now.
      const contactId = await this.contactOf(claims);
      if (contactId && claims.profile) await this.applyProfile(channel, contactId, claims.profile, true);
    } else if (body.token) {
      const given = this.tokens.read(body.token);
      // A token of another channel (or an expired one) starts a new visitor rather than failing the widget.
      if (given && given.channelId === channel.id && given.businessId === channel.business_id) claims = given;
    }
    claims ??= {
      businessId: channel.business_id,
      channelId: channel.id,
      visitorId: `${INBOUND_PREFIX}${randomUUID().replaceAll('-', '')}`,
      verified: false,
    };
    return {
      token: this.tokens.issue(claims),
      visitor_id: claims.visitorId,
      verified: claims.verified,
      messages: await this.history(claims),
      ...(await this.presence(channel, provider)),
    };
  }

  /** Whether someone of the team is around (used the dashboard lately), and the channel's away message. */
  async presence(channel: ChannelRow, provider: ChannelProvider): Promise<WidgetPresence> {
    const now = Date.now();
    const online = await sessionsRepository.anyActive(
      this.db,
      channel.business_id,
      new Date(now - ONLINE_WINDOW_MS).toISOString(),
      new Date(now).toISOString(),
    );
    return { online, away_message: provider.awayMessage?.() ?? null };
  }

  /** The claims of a visitor token for this widget, or 401; its channel must still admit the origin (403). */
  async visitor(
    widgetId: string,
    origin: string | undefined,
    token: string | undefined,
  ): Promise<{ claims: VisitorClaims; channel: ChannelRow }> {
    const { channel } = await this.channelFor(widgetId, origin);
    const claims = token ? this.tokens.read(token) : undefined;
    if (!claims || claims.channelId !== channel.id || claims.businessId !== channel.business_id)
      throw unauthorized('missing or invalid visitor token');
    return { claims, channel };
  }

  /** The visitor's latest messages on the channel, oldest first. */
  async history(claims: VisitorClaims): Promise<VisitorMessage[]> {
    const contactId = await this.contactOf(claims);
    if (!contactId) return [];
    const rows = await visitorsRepository.history(
      this.db,
      claims.businessId,
      claims.channelId,
      [contactId],
      HISTORY_SHOWN,
    );
    return this.shown(claims.businessId, rows.reverse());
  }

  /** A message the visitor wrote, stored once per `clientId` (a retry changes nothing). */
  async write(channel: ChannelRow, claims: VisitorClaims, clientId: string, text: string): Promise<void> {
    await this.store(channel, claims, { ...this.message(channel, claims, clientId), text });
  }

  /**
   * A file the visitor sent (its type read from its bytes, not from what the browser said), stored
   * before its message, so that the message never points at a file that is not there. Stored once
   * per `clientId`.
   */
  async upload(channel: ChannelRow, claims: VisitorClaims, clientId: string, upload: Upload): Promise<void> {
    const file = await acceptedUpload(upload);
    const stored = await this.media.storeReceived(
      claims.businessId,
      `widget/${claims.channelId}/${claims.visitorId}/${clientId}`,
      upload.bytes,
      file.contentType,
    );
    await this.store(channel, claims, {
      ...this.message(channel, claims, clientId),
      type: file.kind,
      providerType: 'upload',
      media: {
        providerMediaId: stored.key,
        mimeType: file.contentType,
        sha256: stored.sha256,
        filename: upload.filename,
        caption: null,
        stored: { key: stored.key, size: stored.size },
      },
    });
  }

  /**
   * What the visitor typed about themselves (the email the widget asks for when no one is around):
   * it fills the contact's empty fields only. 409 before the visitor has written anything.
   */
  async describe(channel: ChannelRow, claims: VisitorClaims, given: VisitorProfile): Promise<{ saved: boolean }> {
    const profile = normaliseProfile(given, '');
    const contactId = await this.contactOf(claims);
    if (!contactId) throw conflict('the visitor has written nothing yet: there is no contact to describe');
    return { saved: await this.applyProfile(channel, contactId, profile, false) };
  }

  private async store(channel: ChannelRow, claims: VisitorClaims, message: InboundMessage): Promise<void> {
    await this.inbound.storeFrom(channel, { messages: [message], statuses: [], contacts: [] });
    if (!claims.verified || !claims.profile) return;
    const contactId = await this.contactOf(claims);
    if (contactId) await this.applyProfile(channel, contactId, claims.profile, true);
  }

  private async applyProfile(
    channel: ChannelRow,
    contactId: string,
    profile: VisitorProfile,
    verified: boolean,
  ): Promise<boolean> {
    const changed = await this.db
      .transaction()
      .execute((trx) => applyVisitorProfile(trx, channel.business_id, contactId, profile, verified, channel.type));
    if (changed) await this.domainEvents.dispatch(['contact_changed']);
    return changed;
  }

  /** An inbound message of the visitor, without its content. */
  private message(channel: ChannelRow, claims: VisitorClaims, clientId: string): InboundMessage {
    return {
      providerMessageId: `${INBOUND_PREFIX}${clientId}`,
      from: claims.visitorId,
      profileName: claims.profile?.name ?? null,
      to: channel.provider_account!,
      timestamp: new Date().toISOString(),
      type: 'text',
      providerType: 'text',
      text: null,
      media: null,
      location: null,
      contacts: [],
      interactive: null,
      button: null,
      reaction: null,
      context: null,
      errors: [],
    };
  }

  /**
   * The visitor started or stopped writing: a signal to the team's open dashboards. Nothing is
   * said before the visitor's first message (there is no conversation to show it in).
   */
  async typing(claims: VisitorClaims, typing: boolean): Promise<void> {
    const contactId = await this.contactOf(claims);
    if (!contactId) return;
    const conversationId = await visitorsRepository.latestConversation(
      this.db,
      claims.businessId,
      claims.channelId,
      contactId,
    );
    if (!conversationId) return;
    await this.signals.send(claims.businessId, {
      type: 'typing',
      conversation_id: conversationId,
      contact_id: contactId,
      by: 'contact',
      user_id: null,
      name: null,
      typing,
    });
  }

  /** The widget received (`delivered`) or showed (`read`) these messages of the business. */
  async acknowledge(
    channel: ChannelRow,
    claims: VisitorClaims,
    ids: string[],
    status: 'delivered' | 'read',
  ): Promise<number> {
    const contactId = await this.contactOf(claims);
    if (!contactId) return 0;
    const rows = await visitorsRepository.byIds(this.db, claims.businessId, ids);
    const timestamp = new Date().toISOString();
    const statuses: ParsedNotification['statuses'] = rows
      .filter(
        (r) =>
          r.direction === 'outbound' &&
          r.channel_id === channel.id &&
          r.contact_id === contactId &&
          r.provider_message_id,
      )
      .map((r) => ({
        providerMessageId: r.provider_message_id!,
        status,
        timestamp,
        recipient: claims.visitorId,
        from: channel.provider_account!,
        errors: [],
        reference: r.id,
      }));
    if (statuses.length === 0) return 0;
    return (await this.inbound.storeFrom(channel, { messages: [], statuses, contacts: [] })).statuses;
  }

  /**
   * Calls `deliver` with the visitor's messages as they are announced (written or moved, in any
   * process), until the answered function is called.
   */
  follow(
    claims: VisitorClaims,
    deliver: (messages: VisitorMessage[]) => void,
    fail: (err: unknown) => void,
    typing: (state: { typing: boolean; name: string | null }) => void = () => undefined,
  ): () => void {
    let contactId: string | undefined;
    let tail = Promise.resolve();
    const events = (events: readonly LiveEvent[]) => {
      const ids = events
        .filter((e) => e.type === 'message_created' || e.type === 'message_status_changed')
        .map((e) => e.subject_id);
      if (ids.length === 0) return;
      // One read at a time, so the widget gets the messages in the order they were announced.
      tail = tail.then(async () => {
        try {
          contactId ??= await this.contactOf(claims);
          if (!contactId) return;
          const rows = await visitorsRepository.byIds(this.db, claims.businessId, [...new Set(ids)]);
          const mine = rows.filter((r) => r.channel_id === claims.channelId && r.contact_id === contactId);
          const messages = await this.shown(claims.businessId, mine);
          if (messages.length > 0) deliver(messages);
        } catch (err) {
          fail(err);
        }
      });
    };
    // A team member writing to this visitor: said at once (the contact is known once the visitor wrote).
    const signal = (signal: LiveSignal) => {
      if (signal.by !== 'user') return;
      void (async () => {
        contactId ??= await this.contactOf(claims);
        if (contactId && signal.contact_id === contactId) typing({ typing: signal.typing, name: signal.name });
      })().catch(fail);
    };
    return this.live.watch(claims.businessId, { events, signal });
  }

  /** The rows the widget may show, with their files. */
  private async shown(businessId: string, rows: VisitorMessageRow[]): Promise<VisitorMessage[]> {
    const visible = rows.filter(isShown);
    const withFiles = visible.filter((r) => r.direction === 'inbound' && FILE_TYPES.has(r.type)).map((r) => r.id);
    const files =
      withFiles.length > 0 ? await this.media.forMessages(businessId, withFiles) : new Map<string, MediaLink[]>();
    return visible.map((row) => shownMessage(row, files.get(row.id) ?? []));
  }

  /** The contact the visitor's address names, once the visitor has written. */
  private async contactOf(claims: VisitorClaims): Promise<string | undefined> {
    const channel = await this.channels.find(claims.businessId, claims.channelId);
    const kind = channelKind(channel?.provider_kind);
    if (!channel || !kind) throw notFound('widget');
    const key = kind.address.reported(claims.visitorId).key;
    const found = await contactIdentitiesRepository.find(this.db, claims.businessId, [
      { kind: kind.address.kind, value: key },
    ]);
    return [...found.values()][0]?.id;
  }
}

/**
 * A signed-in customer's visitor id: the same for one external id on one channel, on every device,
 * and not the external id itself (the widget shows its visitor id).
 */
function verifiedVisitorId(channelId: string, externalId: string): string {
  return `u_${createHash('sha256').update(`${channelId}\n${externalId}`).digest('base64url').slice(0, 32)}`;
}

/** The file a business's message carries (by the URL it was sent with). */
function sentFiles(content: unknown): VisitorAttachment[] {
  const sent = content as OutboundContent | null;
  if (sent?.kind !== 'media') return [];
  return [{ kind: sent.mediaKind, url: sent.url, filename: sent.filename ?? null, content_type: null }];
}

/** The visitor's own messages, and the business's once handed over. */
const isShown = (row: VisitorMessageRow) => row.direction === 'inbound' || SHOWN.has(row.status);

/** A message as the widget shows it. */
function shownMessage(row: VisitorMessageRow, files: MediaLink[]): VisitorMessage {
  const fromVisitor = row.direction === 'inbound';
  const clientId =
    fromVisitor && row.provider_message_id?.startsWith(INBOUND_PREFIX)
      ? row.provider_message_id.slice(INBOUND_PREFIX.length)
      : null;
  return {
    id: row.id,
    client_id: clientId,
    from: fromVisitor ? 'visitor' : 'business',
    text: row.text,
    attachments: fromVisitor
      ? files.map((f) => ({ kind: row.type, url: f.url, filename: f.filename, content_type: f.contentType }))
      : sentFiles(row.outbound_content),
    status: row.status,
    created_at: new Date(row.created_at).toISOString(),
  };
}
