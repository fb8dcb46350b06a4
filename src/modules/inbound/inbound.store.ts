import type { InboundMessage } from '../../channels/provider.ts';
import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ContactsTable, ConversationsTable } from '../../db/types.ts';
import { newId } from '../../lib/ids.ts';
import type { ChannelRow } from '../channels/channels.service.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';
import { openConversation } from '../messaging/messaging.conversations.ts';
import { messagingRepository, type ConversationRow } from '../messaging/messaging.repository.ts';
import { inboundMessageRow } from './inbound.content.ts';
import { newSenderRow, senderAddress, takeProfileName, wouldTakeProfileName } from './inbound.contacts.ts';
import { inboundRepository } from './inbound.repository.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';

/** One inbound message and the channel it came on. */
export interface InboundEntry {
  channel: ChannelRow;
  message: InboundMessage;
}

/**
 * Messages that need nothing but a contact, a conversation and a row: no attachment to fetch, no
 * earlier message to point at (reply, reaction). Those are stored set-based by storeSimpleMessages.
 */
export const isSimple = (message: InboundMessage) =>
  !message.media && !message.reaction && !message.context?.replyToProviderMessageId;

/**
 * Stores simple inbound messages of one business with one statement per step for all of them
 * (senders, conversations, rows, counters), with the same rules as storing them one by one: a
 * redelivered provider id changes nothing; the sender is found by phone key or created with the
 * profile name (and a nameless contact takes it); the conversation is found, created, or reopened /
 * bound by openConversation. The caller holds the senders' phone locks and gives the messages
 * stored already (`${channelId}:${providerMessageId}`, inboundRepository.lockSenders).
 * Answers, per entry, the id of the message stored, or null for a redelivery. Contacts created
 * here write their contact_changed event; the caller writes message_created for the messages.
 */
export async function storeSimpleMessages(
  trx: Db,
  businessId: string,
  entries: InboundEntry[],
  known: ReadonlySet<string>,
): Promise<{ ids: (string | null)[] }> {
  const ids = entries.map((): string | null => null);
  const fresh = freshEntries(entries, known);
  if (fresh.length === 0) return { ids };

  // Senders, in arrival order per phone key: the first creates, later ones may rename (profile rule).
  // The lookup also takes the conversation locks of the senders found (see conversationsOf).
  const keys = fresh.map((i) => senderAddress(entries[i].channel, entries[i].message.from).key);
  const contacts = await messagingRepository.sendersByPhoneKey(
    trx,
    businessId,
    fresh.map((i, n) => ({ key: keys[n], channelId: entries[i].channel.id })),
  );
  const toCreate = new Set<string>();
  const pending: Insertable<ContactsTable>[] = [];
  fresh.forEach((i, n) => {
    const key = keys[n];
    if (contacts.has(key) || toCreate.has(key)) return;
    toCreate.add(key);
    const { channel, message } = entries[i];
    pending.push(newSenderRow(channel, senderAddress(channel, message.from), message.profileName));
  });
  const created = await inboundRepository.insertContacts(trx, pending);
  for (const row of created) contacts.set(row.phone_key as string, row);
  await contactsChanged(
    trx,
    businessId,
    created.map((c) => c.id),
    'created',
  );
  const senders: ContactRow[] = [];
  for (let n = 0; n < fresh.length; n++) {
    const key = keys[n];
    let contact = contacts.get(key)!;
    const { channel, message } = entries[fresh[n]];
    if (wouldTakeProfileName(contact, message.profileName)) {
      contact = await takeProfileName(trx, channel, contact, message.profileName);
      contacts.set(key, contact);
    }
    senders.push(contact);
  }

  const conversations = await conversationsOf(
    trx,
    businessId,
    fresh.map((i, n) => ({ contact: senders[n], channel: entries[i].channel })),
  );
  const rows = fresh.map((i, n) => {
    const { channel } = entries[i];
    const sender = senders[n];
    const conversation = conversations.get(`${sender.id}:${channel.id}`)!;
    const row = inboundMessageRow(businessId, channel, entries[i].message, {
      conversationId: conversation.id,
      contactId: sender.id,
      replyToId: null,
      reactionTargetId: null,
    });
    // Rule 4's export flag from the rows already at hand, so the per-row trigger that would look them
    // up again is skipped (migration 0006); a web-client copy still takes it, for rule 5's lookup.
    if (channel.type !== 'whatsapp_web')
      row.excluded = sender.is_test || conversation.is_internal || conversation.is_group;
    return row;
  });
  const { inserted } = await messagingRepository.insertMessages(trx, businessId, rows);
  const insertedIds = new Set(inserted.map((r) => r.id));
  fresh.forEach((i, n) => {
    const id = rows[n].id;
    if (insertedIds.has(id)) ids[i] = id;
  });
  return { ids };
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
 * The open conversation of each (contact, channel), keyed `${contactId}:${channelId}`: found and
 * open on the channel, or created, all in one statement each; a closed one or one without a
 * channel id goes through openConversation (reopening writes its event). The caller holds the
 * lock openConversation takes for each pair whose contact existed before this transaction
 * (messagingRepository.sendersByPhoneKey); a contact created in it is seen by no other writer.
 */
async function conversationsOf(
  trx: Db,
  businessId: string,
  targets: { contact: ContactRow; channel: ChannelRow }[],
): Promise<Map<string, ConversationRow>> {
  const unique = new Map<string, { contact: ContactRow; channel: ChannelRow }>();
  for (const t of targets) unique.set(`${t.contact.id}:${t.channel.id}`, t);
  const keys = [...unique.keys()].sort();
  const found = await messagingRepository.findConversations(
    trx,
    businessId,
    keys.map((k) => ({
      contact_id: unique.get(k)!.contact.id,
      channel: unique.get(k)!.channel.type,
      channel_id: unique.get(k)!.channel.id,
    })),
  );
  const result = new Map<string, ConversationRow>();
  const missing: Insertable<ConversationsTable>[] = [];
  for (const key of keys) {
    const { contact, channel } = unique.get(key)!;
    const row = found.get(key);
    if (!row) {
      missing.push({
        business_id: businessId,
        id: newId(),
        contact_id: contact.id,
        channel: channel.type,
        channel_id: channel.id,
        tags: contact.tags,
      });
    } else if (row.closed_at === null && row.channel_id === channel.id) {
      result.set(key, row);
    } else {
      const target = { contactId: contact.id, channel: channel.type, channelId: channel.id, tags: contact.tags };
      result.set(
        key,
        (await openConversation(trx, businessId, target, { actorType: 'system', origin: 'inbound_message' }))
          .conversation,
      );
    }
  }
  for (const row of await messagingRepository.insertConversations(trx, missing))
    result.set(`${row.contact_id}:${row.channel_id}`, row);
  return result;
}
