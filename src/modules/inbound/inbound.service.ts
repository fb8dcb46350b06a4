import parseJson from 'secure-json-parse';
import type {
  IncomingHeaders,
  ParsedNotification,
  PollCursor,
  RelayedReply,
  StatusUpdate,
} from '../../channels/provider.ts';
import { messageStatusOf, ProviderError } from '../../channels/provider.ts';
import type { WebhookNotification, WebhookTransport } from '../../channels/channel-kind.ts';
import { channelKind } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { DomainError, forbidden, invalid, unauthorized } from '../../lib/domain-errors.ts';
import type { JobHandler, OutboxWorker } from '../../jobs/outbox.worker.ts';
import type { ChannelRow, ChannelsService } from '../channels/channels.service.ts';
import { recordChannelOptOut } from '../contacts/channel-opt-outs.ts';
import { identityLockName } from '../contacts/contact-identity.ts';
import { messageStatusRepository } from '../messages/message-status.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { Batcher } from '../../lib/batcher.ts';
import { inSlices, nextTurn } from '../../db/slices.ts';
import { isUuid } from '../../lib/ids.ts';
import { storableText } from '../../lib/json-check.ts';
import type { AvatarStore } from '../media/media.avatars.ts';
import { MEDIA_FETCH_JOB } from '../media/media.fetch-job.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { messagesChanged, messagesCreated, messageStatusesChanged } from '../domain-events/domain-events.writer.ts';
import type { DomainEventType } from '../domain-events/domain-events.types.ts';
import { errorText } from './inbound.content.ts';
import { senderIdentity } from './inbound.contacts.ts';
import { inboundCursorsRepository } from './inbound-cursors.repository.ts';
import { SENDER_PROFILE_JOB, senderProfileJobHandler } from './inbound.profile-job.ts';
import { inboundRepository } from './inbound.repository.ts';
import { sortOutEchoedSends } from './inbound.echoes.ts';
import { storeMessages } from './inbound.store.ts';
import { applyInboundUpdate, type AppliedUpdate } from './inbound.updates.ts';

/** What one notification did, for the request log. */
export interface InboundSummary {
  stored: number;
  duplicates: number;
  statuses: number;
  /** Changes of messages stored before, their status aside (a call's details, its recording). */
  changes: number;
  /** Receipts for provider message ids we do not know (logged at debug). */
  unknownStatusIds: string[];
  /**
   * Receipts whose reference names a send that holds another provider id: the provider has two
   * messages for one send (a retry of a call it had in fact carried out), so the recipient may
   * have it twice (logged as a warning).
   */
  duplicateSends: { messageId: string; providerMessageIds: [string, string] }[];
  /** The body the adapter answers the notification with (ChannelProvider.answerNotification), if it makes one. */
  answer?: string;
  /** Replies relayed through their conversations' channels (WebhookNotification.relayed). */
  relayed?: number;
  /** Relayed replies not sent, with why (logged). */
  unrelayed?: { conversationId: string; key: string; reason: string }[];
}

/** What the relay of replies did (RepliesService.relay). */
export interface RelayResult {
  sent: number;
  refused: { conversationId: string; key: string; reason: string }[];
}

/**
 * A channel of the notification is no longer the one it was read as (deleted, or its account given to
 * another business, by another process): nothing of it is stored, and it is read again. A 503 when
 * that happens twice in a row, so the provider delivers the notification again later.
 */
export class ChannelChanged extends DomainError {
  constructor() {
    super(
      'unavailable',
      'unavailable',
      'a channel of this notification changed while it was being stored; deliver it again',
    );
  }
}

/** The poller lost a channel's lease while storing what it read: the transaction is undone. */
class LeaseLost extends Error {}

const emptySummary = (): InboundSummary => ({
  stored: 0,
  duplicates: 0,
  statuses: 0,
  changes: 0,
  unknownStatusIds: [],
  duplicateSends: [],
});

/** The query parameters of a request path (the last value of a repeated name), none without one. */
function queryOf(path: string | undefined): Record<string, string> {
  const at = path?.indexOf('?') ?? -1;
  return at < 0 ? {} : Object.fromEntries(new URLSearchParams(path!.slice(at + 1)));
}

/** A verified notification, parsed, with the channels it addresses (by provider account of its kind). */
interface Notification {
  kind: string;
  parsed: ParsedNotification;
  channels: Map<string, ChannelRow>;
}

/**
 * Provider notifications: Meta's subscription handshake, and inbound messages and delivery receipts,
 * authenticated by the channel's signature before anything is stored, and written a bounded slice per transaction;
 * and what the poller read of a polled channel (storePolled). Both store through `store`.
 */
export class InboundService {
  // One batch written at a time while the next one gathers (see Batcher), of at most `sliceItems`
  // messages and receipts.
  private readonly batcher: Batcher<Notification, InboundSummary>;

  /**
   * `sliceItems`: messages and receipts written in one transaction (src/db/slices.ts). A larger
   * notification is written in slices of that size, one transaction each, so the other callers of
   * the database get their turn between two of them.
   */
  constructor(
    private readonly db: Db,
    private readonly channels: ChannelsService,
    private readonly worker: OutboxWorker,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
    private readonly avatars: AvatarStore,
    private readonly sliceItems = 200,
    /** Sends the replies a mirroring channel's provider relays (WebhookNotification.relayed). */
    private readonly relay?: (channel: ChannelRow, replies: RelayedReply[]) => Promise<RelayResult>,
  ) {
    this.batcher = new Batcher((items) => this.storeBatch(items), {
      maxRunning: 1,
      maxItems: sliceItems,
      sizeOf: (n) => Math.max(1, n.parsed.messages.length + n.parsed.statuses.length + (n.parsed.updates?.length ?? 0)),
    });
  }

  /** The outbox handler of sender profile lookups. */
  profileJobHandler(): JobHandler {
    return senderProfileJobHandler(this.db, this.channels, this.avatars);
  }

  /**
   * The provider's subscription handshake (Meta's `hub.challenge`): the answer of the channel whose
   * lookup field (the verify token) the query names; 403 otherwise.
   */
  async verifySubscription(kind: string, query: Record<string, unknown>): Promise<string> {
    const handshake = webhookOf(kind).handshake;
    const token = handshake?.token(query);
    const channel =
      handshake && typeof token === 'string' && token !== ''
        ? await this.channels.findBySecret(kind, handshake.lookupField, token)
        : undefined;
    const challenge = channel ? (this.channels.providerFor(channel).verifySubscription?.(query) ?? null) : null;
    if (challenge === null) throw forbidden('verification refused');
    return challenge;
  }

  /**
   * A webhook notification of a provider kind as received. Every account it names must be a
   * channel's, and the signature of the raw bytes must match each of those channels' secret (401
   * otherwise, nothing stored). Then its messages and receipts are written, in arrival order, in
   * transactions of at most `sliceItems` of them (shared with the notifications that arrived
   * meanwhile; see storeBatch), each of which first checks that each channel is still the one read
   * here: a channel read from the cache may have been deleted or given to another business by another
   * server process since, and then the channels are read again. It is answered once every slice has
   * committed: a notification cut short by a crash was not answered, and its redelivery skips the
   * messages stored already (by provider id) and the receipts applied already (a status only moves
   * forward), so nothing is stored twice.
   */
  async receive(kind: string, raw: Buffer, headers: IncomingHeaders, path?: string): Promise<InboundSummary> {
    const transport = webhookOf(kind);
    const body = transport.parse ? parseWith(transport, raw) : parseBody(raw);
    let read: WebhookNotification;
    try {
      read = transport.read(body, queryOf(path));
    } catch (err) {
      if (err instanceof ProviderError) throw invalid(err.message);
      throw err;
    }
    const signed = { raw, headers, path };
    let channels = await this.signedChannels(transport, kind, signed, read.accounts, false);
    const summary = emptySummary();
    if (channels.size === 0) return summary; // nothing addressed to an account: nothing to store
    // The answer is the first account's channel's (a provider that is told what to do next, in the
    // answer, addresses one account per request).
    const [first] = channels.values();
    const answer = this.channels.providerFor(first).answerNotification?.(read, queryOf(path));
    if (answer !== undefined) summary.answer = answer;
    await this.relayReplies(read, channels, summary);
    for (const parsed of slicesOf(read.notification, this.sliceItems)) {
      const part = await this.batcher.submit({ kind, parsed, channels }).catch(async (err: unknown) => {
        if (!(err instanceof ChannelChanged)) throw err;
        channels = await this.signedChannels(transport, kind, signed, read.accounts, true);
        return this.batcher.submit({ kind, parsed, channels });
      });
      addTo(summary, part);
    }
    await this.handOver(summary);
    return summary;
  }

  /** The notification's relayed replies, each handed over with the channel that signed it. */
  private async relayReplies(
    read: WebhookNotification,
    channels: Map<string, ChannelRow>,
    summary: InboundSummary,
  ): Promise<void> {
    if (!read.relayed?.length || !this.relay) return;
    for (const [account, channel] of channels) {
      const mine = read.relayed.filter((r) => r.account === account);
      if (mine.length === 0) continue;
      const { sent, refused } = await this.relay(channel, mine);
      summary.relayed = (summary.relayed ?? 0) + sent;
      summary.unrelayed = [...(summary.unrelayed ?? []), ...refused];
    }
  }

  /**
   * What a polled channel's adapter read (PollerTransport: an IMAP mailbox), stored as a webhook's
   * messages and receipts are (store), in one transaction with the channel's cursor: a restart
   * reads on from the last batch stored, never twice nor past one. Null, nothing stored, when
   * `holder` no longer holds the channel's lease (another process reads it now); throws
   * ChannelChanged when the channel was deleted or changed hands.
   */
  async storePolled(
    channel: ChannelRow,
    parsed: ParsedNotification,
    cursor: PollCursor,
    holder: string,
  ): Promise<InboundSummary | null> {
    if (!channel.provider_kind || !channel.provider_account) throw new Error(`channel ${channel.id} has no provider`);
    const notification: Notification = {
      kind: channel.provider_kind,
      parsed,
      channels: new Map([[channel.provider_account, channel]]),
    };
    const summary = emptySummary();
    await nextTurn();
    const outcome = await this.db
      .transaction()
      .execute(async (trx) => {
        const { mediaQueued } = await this.store(trx, [notification], [summary]);
        if (!(await inboundCursorsRepository.advance(trx, channel, holder, cursor))) throw new LeaseLost();
        return { mediaQueued };
      })
      .catch((err: unknown) => {
        if (err instanceof LeaseLost) return null;
        throw err;
      });
    if (!outcome) return null;
    if (outcome.mediaQueued) this.worker.wake(MEDIA_FETCH_JOB);
    await this.handOver(summary);
    return summary;
  }

  /** What the subscribers of the events stored write (webhook deliveries) exists when the caller goes on. */
  private async handOver(summary: InboundSummary): Promise<void> {
    const types: DomainEventType[] = [
      ...(summary.stored > 0 ? (['message_created', 'conversation_changed', 'contact_changed'] as const) : []),
      ...(summary.statuses > 0 ? (['message_status_changed'] as const) : []),
      ...(summary.changes > 0 ? (['message_changed'] as const) : []),
    ];
    if (types.length > 0) await this.domainEvents.dispatch(types);
  }

  /**
   * What a channel's own connection carried (a socket transport: a widget visitor's message or
   * receipt), already authenticated by its caller, stored as a webhook's messages and receipts are
   * (store), in the batches shared with them; answered once committed and handed over. A channel
   * deleted or moved meanwhile answers 503 (ChannelChanged).
   */
  async storeFrom(channel: ChannelRow, parsed: ParsedNotification): Promise<InboundSummary> {
    if (!channel.provider_kind || !channel.provider_account) throw new Error(`channel ${channel.id} has no provider`);
    const channels = new Map([[channel.provider_account, channel]]);
    const summary = await this.batcher.submit({ kind: channel.provider_kind, parsed, channels });
    await this.handOver(summary);
    return summary;
  }

  /**
   * The channel of each account, each with a signature check of the bytes (401 on an unknown account
   * or a signature that does not match). A cached channel whose secret does not match is read again:
   * another process may have rotated it.
   */
  private async signedChannels(
    transport: WebhookTransport,
    kind: string,
    { raw, headers, path }: { raw: Buffer; headers: IncomingHeaders; path?: string },
    accountIds: string[],
    fresh: boolean,
  ): Promise<Map<string, ChannelRow>> {
    const signedBy = (channel: ChannelRow) => this.channels.providerFor(channel).verifySignature(raw, headers, path);
    const channels = new Map<string, ChannelRow>();
    for (const account of accountIds) {
      let channel = await this.channels.findByProviderAccount(kind, account, { fresh });
      if (channel && !fresh && !signedBy(channel))
        channel = await this.channels.findByProviderAccount(kind, account, { fresh: true });
      if (!channel) throw unauthorized(transport.refusals.unknownAccount);
      if (!signedBy(channel)) throw unauthorized(transport.refusals.badSignature);
      channels.set(account, channel);
    }
    return channels;
  }

  /** Notifications received while earlier ones are being written go into one transaction together. */
  private async storeBatch(notifications: Notification[]): Promise<InboundSummary[]> {
    const summaries = notifications.map(emptySummary);
    // The requests that arrived during the previous batch or slice go first (see nextTurn).
    await nextTurn();
    const { mediaQueued, profilesQueued } = await this.db
      .transaction()
      .execute((trx) => this.store(trx, notifications, summaries));
    if (mediaQueued) this.worker.wake(MEDIA_FETCH_JOB);
    if (profilesQueued) this.worker.wake(SENDER_PROFILE_JOB);
    return summaries;
  }

  private async store(
    trx: Db,
    notifications: Notification[],
    summaries: InboundSummary[],
  ): Promise<{ mediaQueued: boolean; profilesQueued: boolean }> {
    const stored = await this.storeMessagesAndStatuses(trx, notifications, summaries);
    const updated = await this.applyUpdates(trx, notifications, summaries);
    return { ...stored, mediaQueued: stored.mediaQueued || updated.mediaQueued };
  }

  /**
   * The updates of inbound messages stored before (a call's end, its recording), after the messages
   * of the same notifications (which they may name), each under its message's lock; the status
   * moves are written as message_status_changed.
   */
  private async applyUpdates(
    trx: Db,
    notifications: Notification[],
    summaries: InboundSummary[],
  ): Promise<{ mediaQueued: boolean }> {
    let mediaQueued = false;
    const moved = new Map<string, { id: string; status: string }[]>();
    const changed = new Map<string, AppliedUpdate['changed']>();
    for (const [n, { parsed, channels }] of notifications.entries()) {
      for (const update of parsed.updates ?? []) {
        const channel = channels.get(update.to);
        if (!channel) continue;
        const applied = await applyInboundUpdate(trx, channel, update);
        if (!applied) {
          summaries[n].unknownStatusIds.push(update.providerMessageId);
          continue;
        }
        if (applied.mediaQueued) mediaQueued = true;
        if (applied.changed.length > 0) {
          summaries[n].changes += applied.changed.length;
          changed.set(channel.business_id, [...(changed.get(channel.business_id) ?? []), ...applied.changed]);
        }
        if (applied.moved) {
          summaries[n].statuses++;
          moved.set(channel.business_id, [...(moved.get(channel.business_id) ?? []), applied.moved]);
        }
      }
    }
    for (const [businessId, changes] of moved) await messageStatusesChanged(trx, businessId, changes);
    for (const [businessId, changes] of changed) await messagesChanged(trx, businessId, changes);
    return { mediaQueued };
  }

  private async storeMessagesAndStatuses(
    trx: Db,
    notifications: Notification[],
    summaries: InboundSummary[],
  ): Promise<{ mediaQueued: boolean; profilesQueued: boolean }> {
    const current = await lockAccounts(trx, notifications);
    for (const { kind, channels } of notifications) {
      for (const [account, channel] of channels) {
        if (current.get(`${kind}:${account}`) !== `${channel.business_id}:${channel.id}`) throw new ChannelChanged();
      }
    }
    const arrived = notifications.flatMap(({ parsed, channels }, n) =>
      parsed.messages.flatMap((message) => {
        const channel = channels.get(message.to);
        return channel ? [{ n, channel, message }] : [];
      }),
    );
    // Every sender's phone is locked up front, in one sorted order, so two notifications naming the
    // same senders in another order cannot deadlock; the same statement finds the redeliveries.
    const locks = new Map<string, Set<string>>();
    for (const { channel, message } of arrived) {
      const set = locks.get(channel.business_id) ?? new Set<string>();
      set.add(identityLockName(senderIdentity(channel, message.from)));
      locks.set(channel.business_id, set);
    }
    const known = new Map<string, Set<string>>();
    for (const [businessId, names] of [...locks].sort(([a], [b]) => a.localeCompare(b))) {
      const messages = arrived.flatMap((e) =>
        e.channel.business_id === businessId
          ? [{ channelId: e.channel.id, providerMessageId: e.message.providerMessageId }]
          : [],
      );
      known.set(businessId, await inboundRepository.lockSenders(trx, businessId, [...names].sort(), messages));
    }
    const { entries, receipts } = await sortOutEchoedSends(trx, arrived, known);
    const echoReceipts = new Map<number, StatusUpdate[]>();
    for (const [{ n }, receipt] of receipts) echoReceipts.set(n, [...(echoReceipts.get(n) ?? []), receipt]);
    // The id of each message stored, by its place in `entries` (arrival order), for message_created.
    const storedIds: (string | null)[] = entries.map(() => null);
    const copies = new Set<string>();
    let mediaQueued = false;
    let profilesQueued = false;
    for (const businessId of locks.keys()) {
      const mine = entries.flatMap((e, i) => (e.channel.business_id === businessId ? [i] : []));
      const stored = await storeMessages(
        trx,
        businessId,
        mine.map((i) => entries[i]),
        known.get(businessId)!,
      );
      mine.forEach((i, k) => (storedIds[i] = stored.ids[k]));
      for (const id of stored.copies) copies.add(id);
      if (stored.mediaQueued) mediaQueued = true;
      if (stored.profilesQueued) profilesQueued = true;
    }
    storedIds.forEach((id, i) => (id ? summaries[entries[i].n].stored++ : summaries[entries[i].n].duplicates++));
    // Their events are written in this transaction, in arrival order, so none is lost or out of order;
    // a copy of a message another channel holds is announced by none.
    for (const businessId of locks.keys()) {
      const ids = storedIds.filter(
        (id, i): id is string => id !== null && !copies.has(id) && entries[i].channel.business_id === businessId,
      );
      await messagesCreated(trx, businessId, ids);
    }
    const moved = new Map<string, { id: string; status: string }[]>();
    const held = await heldProviderIds(trx, notifications);
    for (const [n, { parsed, channels }] of notifications.entries()) {
      for (const status of [...parsed.statuses, ...(echoReceipts.get(n) ?? [])]) {
        const channel = channels.get(status.from);
        if (!channel) continue;
        if (status.upTo) {
          const changes = await messageStatusRepository.moveUpTo(
            trx,
            channel.business_id,
            { channelId: channel.id, identity: senderIdentity(channel, status.recipient) },
            messageStatusOf(status.status),
            status.timestamp,
          );
          summaries[n].statuses += changes.length;
          if (changes.length > 0)
            moved.set(channel.business_id, [...(moved.get(channel.business_id) ?? []), ...changes]);
          continue;
        }
        const key = `${channel.id}:${status.providerMessageId}`;
        const changed = await this.applyStatus(trx, channel, status, held.has(key));
        if (changed) {
          held.add(key); // recorded by its reference, if it was not held yet
          summaries[n].statuses++;
          const ofBusiness = moved.get(channel.business_id) ?? [];
          ofBusiness.push(changed);
          moved.set(channel.business_id, ofBusiness);
          if (status.recipientOptedOut) await optOutRecipient(trx, channel.business_id, changed.id);
        } else if (
          !held.has(key) &&
          !(await messagesRepository.findByProviderMessageId(
            trx,
            channel.business_id,
            channel.id,
            status.providerMessageId,
          ))
        ) {
          const reference = messageReference(status);
          const sent = reference
            ? await messagesRepository.outboundProviderId(trx, channel.business_id, channel.id, reference)
            : undefined;
          if (sent)
            summaries[n].duplicateSends.push({
              messageId: reference!,
              providerMessageIds: [sent, status.providerMessageId],
            });
          else summaries[n].unknownStatusIds.push(status.providerMessageId);
        }
      }
    }
    for (const [businessId, changes] of moved) await messageStatusesChanged(trx, businessId, changes);
    return { mediaQueued, profilesQueued };
  }

  /**
   * Moves the outbound message forward (never backwards: see canMoveStatus); the message and its new
   * status, undefined when not moved.
   * A receipt whose provider id no message holds yet finds its message by the reference the
   * provider echoed (recordByReference): its send's answer was not stored yet, or never came. When
   * that finds the provider id recorded meanwhile (the send's answer, or a receipt handled by
   * another process, committed between the two statements), the move by provider id is tried again.
   */
  private async applyStatus(
    trx: Db,
    channel: ChannelRow,
    status: StatusUpdate,
    held: boolean,
  ): Promise<{ id: string; status: string } | undefined> {
    const to = messageStatusOf(status.status);
    const error = to === 'ERROR' ? errorText(status.errors) : null;
    const byProviderId = async () => {
      const moved = await messageStatusRepository.moveStatus(
        trx,
        channel.business_id,
        { channelId: channel.id, providerMessageId: status.providerMessageId },
        to,
        { statusAt: status.timestamp, ...(error !== null ? { error } : {}) },
      );
      return moved && { id: moved.id, status: moved.status };
    };
    // A provider id no message held when the transaction began (heldProviderIds) is not tried by
    // itself: a flood of receipts for messages the service never sent costs no statement each.
    const moved = held ? await byProviderId() : undefined;
    if (moved) return moved;
    const reference = messageReference(status);
    if (!reference) return undefined;
    const recorded = await messageStatusRepository.recordByReference(
      trx,
      channel.business_id,
      { channelId: channel.id, id: reference },
      status.providerMessageId,
      to,
      { statusAt: status.timestamp, error },
    );
    return recorded ?? byProviderId();
  }
}

/**
 * The provider reported that the failed message's recipient unsubscribed: its contact is opted out
 * of the message's channel type, in the commit that moves the message.
 */
async function optOutRecipient(trx: Db, businessId: string, messageId: string): Promise<void> {
  const message = await messageStatusRepository.outboundMessage(trx, businessId, messageId);
  if (message?.contact_id) await recordChannelOptOut(trx, businessId, message.contact_id, message.channel);
}

/**
 * A notification's messages, its receipts then its updates (the order one transaction writes them in), in
 * consecutive slices of at most `size` items.
 */
function slicesOf(notification: ParsedNotification, size: number): ParsedNotification[] {
  const { messages, statuses, contacts, updates = [] } = notification;
  if (messages.length + statuses.length + updates.length <= size) return [notification];
  const items = [...messages.map((m) => ({ m })), ...statuses.map((s) => ({ s })), ...updates.map((u) => ({ u }))];
  return inSlices(items, size).map((slice) => ({
    messages: slice.flatMap((i) => ('m' in i ? [i.m] : [])),
    statuses: slice.flatMap((i) => ('s' in i ? [i.s] : [])),
    contacts,
    updates: slice.flatMap((i) => ('u' in i ? [i.u] : [])),
  }));
}

function addTo(summary: InboundSummary, part: InboundSummary): void {
  summary.stored += part.stored;
  summary.duplicates += part.duplicates;
  summary.statuses += part.statuses;
  summary.changes += part.changes;
  summary.unknownStatusIds.push(...part.unknownStatusIds);
  summary.duplicateSends.push(...part.duplicateSends);
}

/** The webhook transport of a provider kind (the route only passes kinds it resolved). */
function webhookOf(kind: string): WebhookTransport {
  const inbound = channelKind(kind)?.inbound;
  if (inbound?.type !== 'webhook') throw new Error(`provider kind ${kind} is not notified by webhook`);
  return inbound;
}

/**
 * The channels holding the notifications' accounts now, as `${business_id}:${id}` by
 * `${kind}:${account}`, locked until the transaction ends (inboundRepository.lockChannels), kind by kind.
 */
async function lockAccounts(trx: Db, notifications: Notification[]): Promise<Map<string, string>> {
  const accounts = new Map<string, Set<string>>();
  for (const { kind, channels } of notifications) {
    const set = accounts.get(kind) ?? new Set<string>();
    for (const account of channels.keys()) set.add(account);
    accounts.set(kind, set);
  }
  const current = new Map<string, string>();
  for (const [kind, names] of [...accounts].sort(([a], [b]) => a.localeCompare(b))) {
    for (const [account, holder] of await inboundRepository.lockChannels(trx, kind, [...names]))
      current.set(`${kind}:${account}`, holder);
  }
  return current;
}

/**
 * The receipts' provider ids that a message of their channel holds, as `${channelId}:${providerMessageId}`,
 * read in one statement per business.
 */
async function heldProviderIds(trx: Db, notifications: Notification[]): Promise<Set<string>> {
  const refs = new Map<string, { channelId: string; providerMessageId: string }[]>();
  for (const { parsed, channels } of notifications) {
    for (const status of parsed.statuses) {
      const channel = channels.get(status.from);
      if (!channel || status.upTo) continue;
      const ofBusiness = refs.get(channel.business_id) ?? [];
      ofBusiness.push({ channelId: channel.id, providerMessageId: status.providerMessageId });
      refs.set(channel.business_id, ofBusiness);
    }
  }
  const held = new Set<string>();
  for (const [businessId, ofBusiness] of refs)
    for (const key of (await messagesRepository.idsByProviderMessageId(trx, businessId, ofBusiness)).keys())
      held.add(key);
  return held;
}

/** The message id a receipt echoes (SendRequest.reference), when it is one: anything else names no message. */
const messageReference = (status: StatusUpdate) =>
  status.reference && isUuid(status.reference) ? status.reference : undefined;

/** A body the transport reads itself (form-encoded, say). */
function parseWith(transport: WebhookTransport, raw: Buffer): unknown {
  if (raw.length === 0) throw invalid('empty notification body');
  try {
    return transport.parse!(raw);
  } catch {
    throw invalid('malformed notification body');
  }
}

function parseBody(raw: Buffer): unknown {
  if (raw.length === 0) throw invalid('empty notification body');
  const text = raw.toString('utf8');
  // PostgreSQL stores neither a NUL nor a lone surrogate (JSON writes them \u0000, \ud83d): a
  // customer's message carrying one is stored without it, rather than refused and redelivered by
  // Meta forever.
  const reviver = UNSTORABLE_ESCAPE.test(text)
    ? (_key: string, value: unknown) => (typeof value === 'string' ? storableText(value) : value)
    : undefined;
  try {
    return parseJson(text, reviver, { protoAction: 'remove', constructorAction: 'remove' });
  } catch {
    throw invalid('malformed JSON body');
  }
}

/** The JSON escapes of a NUL or of a surrogate (paired or not: the reviver keeps pairs). */
const UNSTORABLE_ESCAPE = /\\u(0000|[dD][89a-fA-F])/;
