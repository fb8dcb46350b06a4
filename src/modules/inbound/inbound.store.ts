import type { InboundMessage } from '../../channels/provider.ts';
import { channelKind, primaryChannelTypes } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { enqueueJobs } from '../../jobs/outbox.worker.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import type { ChannelRow } from '../channels/channels.service.ts';
import { recordChannelOptOut } from '../contacts/channel-opt-outs.ts';
import { identityKey } from '../contacts/contact-identity.ts';
import { contactsRepository, type ContactRow, type NewMessageContact } from '../contacts/contacts.repository.ts';
import { openConversations } from '../conversations/open-conversations.ts';
import { MEDIA_FETCH_JOB } from '../media/media.fetch-job.ts';
import { mediaRepository } from '../media/media.repository.ts';
import { messagesRepository, type NewMessage } from '../messages/messages.repository.ts';
import { inboundMessageRow } from './inbound.content.ts';
import { SENDER_PROFILE_JOB } from './inbound.profile-job.ts';
import { inboundRepository } from './inbound.repository.ts';
import {
  newSenderRow,
  senderAddress,
  senderIdentity,
  takeProfileName,
  wouldTakeProfileName,
} from './inbound.contacts.ts';

/** One inbound message and the channel it came on. */
export interface InboundEntry {
  channel: ChannelRow;
  message: InboundMessage;
}

/** What storeMessages wrote. */
export interface StoredMessages {
  /** Per entry, the id of the message stored, or null for a redelivery. */
  ids: (string | null)[];
  /**
   * The ids stored as a copy of a message another channel of the number holds already (a web
   * client's copy of a Cloud API message): kept, but announced by none, as that message was.
   */
  copies: Set<string>;
  /** Whether attachments were stored, whose fetch jobs wait in the outbox. */
  mediaQueued: boolean;
  /** Whether new contacts wait for their profile's name (inbound.profile-job.ts). */
  profilesQueued: boolean;
}

/**
 * Stores the inbound messages of one business (one, or a notification's thousands) with one
 * statement per step for all of them: senders, conversations, referenced messages, rows and
 * counters, attachments and their fetch jobs. The rules, as for each message in arrival order:
 * a provider id stored already, or earlier in the batch, is a redelivery and changes nothing; the
 * sender is found by its identity (its address, its own or an alias a merge left) or created with
 * the profile name, and a contact without any name takes it; the conversation is found, created,
 * or reopened / bound (openConversations); a reply or a reaction points at the message of its
 * channel with the provider id it names, stored before or earlier in the batch; an attachment gets
 * its media row and a fetch job. The caller holds the senders' identity locks and gives the messages stored already
 * (`${channelId}:${providerMessageId}`, inboundRepository.lockSenders).
 */
export async function storeMessages(
  trx: Db,
  businessId: string,
  entries: InboundEntry[],
  known: ReadonlySet<string>,
): Promise<StoredMessages> {
  const ids = entries.map((): string | null => null);
  const fresh = freshEntries(entries, known);
  if (fresh.length === 0) return { ids, copies: new Set(), mediaQueued: false, profilesQueued: false };

  const { senders, created } = await sendersOf(
    trx,
    businessId,
    fresh.map((i) => entries[i]),
  );
  // The sender lookup took the conversation locks of the senders found (sendersByIdentity); a
  // contact created in this transaction is seen by no other writer.
  const conversations = await openConversations(
    trx,
    businessId,
    fresh.map((i, n) => ({
      contactId: senders[n].id,
      channel: entries[i].channel.type,
      channelId: entries[i].channel.id,
      tags: senders[n].tags,
    })),
    { actorType: 'system', origin: 'inbound_message' },
    { locksHeld: true },
  );

  // A reply or a reaction points at a message stored before (read now, under the senders' locks, so
  // a redelivery the lock probe missed is found too) or else at one earlier in this batch.
  const referenceKey = (channelId: string, providerId: string | null | undefined) =>
    providerId ? `${channelId}:${providerId}` : undefined;
  const referenced = fresh.flatMap((i) => {
    const { channel, message } = entries[i];
    return [message.context?.replyToProviderMessageId, message.reaction?.providerMessageId].flatMap((id) =>
      id ? [{ channelId: channel.id, providerMessageId: id }] : [],
    );
  });
  const stored = await messagesRepository.idsByProviderMessageId(trx, businessId, referenced);
  const earlier = new Map<string, string>();
  const idOf = (key: string | undefined) => (key ? (stored.get(key) ?? earlier.get(key) ?? null) : null);

  const rows = fresh.map((i, n) => {
    const { channel, message } = entries[i];
    const sender = senders[n];
    const conversation = conversations.get(`${sender.id}:${channel.id}`)!;
    const row: NewMessage = inboundMessageRow(businessId, channel, message, {
      conversationId: conversation.id,
      contactId: sender.id,
      replyToId: idOf(referenceKey(channel.id, message.context?.replyToProviderMessageId)),
      reactionTargetId: idOf(referenceKey(channel.id, message.reaction?.providerMessageId)),
    });
    // Rule 4's export flag from the rows already at hand, so the per-row trigger that would look them
    // up again is skipped (migration 0006); a channel that may record copies of its primary channel's
    // messages still takes it, for rule 5's lookup (migration 0048).
    if (!primaryChannelTypes.has(channel.type))
      row.excluded = sender.is_test || conversation.is_internal || conversation.is_group;
    earlier.set(`${channel.id}:${message.providerMessageId}`, row.id);
    return row;
  });
  const { inserted } = await messagesRepository.insertMessages(trx, businessId, rows);
  const insertedIds = new Set(inserted.map((r) => r.id));
  const copies = new Set(inserted.filter((r) => r.duplicate).map((r) => r.id));
  fresh.forEach((i, n) => {
    if (insertedIds.has(rows[n].id)) ids[i] = rows[n].id;
  });

  // A STOP or START the provider reported changes the sender's opt-out of the channel type.
  for (const [n, i] of fresh.entries()) {
    const { channel, message } = entries[i];
    if (message.optOut && insertedIds.has(rows[n].id))
      await recordChannelOptOut(trx, businessId, senders[n].id, channel.type, message.optOut === 'stop');
  }

  // A new contact of a provider whose notifications carry no name is named from its profile, later.
  const named = new Set<string>();
  const profileJobs = fresh.flatMap((i, n) => {
    const contactId = senders[n].id;
    if (!created.has(contactId) || named.has(contactId) || !insertedIds.has(rows[n].id)) return [];
    if (!channelKind(entries[i].channel.provider_kind)?.capabilities.senderProfiles) return [];
    named.add(contactId);
    return [{ businessId, kind: SENDER_PROFILE_JOB, refId: rows[n].id }];
  });

  const withMedia = fresh.flatMap((i, n) => {
    const media = entries[i].message.media;
    return media && insertedIds.has(rows[n].id) ? [{ messageId: rows[n].id, media }] : [];
  });
  await mediaRepository.insertMany(
    trx,
    businessId,
    withMedia.map(({ messageId, media }) => ({
      message_id: messageId,
      provider_media_id: media.providerMediaId,
      content_type: media.mimeType,
      filename: media.filename,
      sha256: media.sha256,
      storage_key: media.stored?.key ?? null,
      size_bytes: media.stored?.size ?? null,
    })),
  );
  // A file in the store already (media.stored) has nothing to fetch.
  const toFetch = withMedia.filter(({ media }) => !media.stored);
  await enqueueJobs(trx, [
    ...toFetch.map(({ messageId }) => ({ businessId, kind: MEDIA_FETCH_JOB, refId: messageId })),
    ...profileJobs,
  ]);
  return { ids, copies, mediaQueued: toFetch.length > 0, profilesQueued: profileJobs.length > 0 };
}

/** Indexes of the entries whose provider id is neither stored already nor earlier in the batch. */
function freshEntries(entries: InboundEntry[], known: ReadonlySet<string>): number[] {
  const seen = new Set(known);
  const fresh: number[] = [];
  entries.forEach(({ channel, message }, i) => {
    const key = `${channel.id}:${message.providerMessageId}`;
    if (seen.has(key)) return;
    seen.add(key);
    fresh.push(i);
  });
  return fresh;
}

/**
 * The sender of each message, in arrival order per address: the first message of a new sender
 * creates it, and later ones may rename it (the profile rule of takeProfileName). Senders are found
 * by their identity, of their channel's address kind; the lookup also takes the conversation locks
 * of the senders found (sendersByIdentity).
 */
async function sendersOf(
  trx: Db,
  businessId: string,
  entries: InboundEntry[],
): Promise<{ senders: ContactRow[]; created: Set<string> }> {
  const addresses = entries.map(({ channel, message }) => senderAddress(channel, message.from));
  const identities = entries.map(({ channel, message }) => senderIdentity(channel, message.from));
  const keys = identities.map(identityKey);
  const contacts = await inboundRepository.sendersByIdentity(
    trx,
    businessId,
    entries.map(({ channel }, n) => ({ identity: identities[n], channelId: channel.id })),
  );
  const pending = new Map<string, NewMessageContact>();
  entries.forEach(({ channel, message }, n) => {
    if (contacts.has(keys[n]) || pending.has(keys[n])) return;
    pending.set(keys[n], newSenderRow(channel, identities[n], addresses[n], message.profileName));
  });
  const created = await contactsRepository.insertMany(trx, [...pending.values()]);
  const createdById = new Map(created.map((c) => [c.id, c]));
  for (const [key, row] of pending) contacts.set(key, createdById.get(row.id)!);
  await contactsChanged(
    trx,
    businessId,
    created.map((c) => c.id),
    'created',
  );
  const senders: ContactRow[] = [];
  for (const [n, { channel, message }] of entries.entries()) {
    let contact = contacts.get(keys[n])!;
    if (wouldTakeProfileName(contact, message.profileName)) {
      contact = await takeProfileName(trx, channel, contact, message.profileName);
      contacts.set(keys[n], contact);
    }
    senders.push(contact);
  }
  return { senders, created: new Set(created.map((c) => c.id)) };
}
