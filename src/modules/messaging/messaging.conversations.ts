import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable, EventsTable } from '../../db/types.ts';
import { newId } from '../../lib/ids.ts';
import { writeEvents } from '../events/events.writer.ts';
import { messagingRepository, type ConversationRow } from './messaging.repository.ts';

/** Who causes a conversation to open, for the `conversation_unarchived` event a reopening writes. */
export interface OpenedBy {
  actorType: EventsTable['actor_type'];
  /** `data.origin` of the event, e.g. `inbound_message` or `api`. */
  origin: string;
  userId?: string | null;
  agentId?: string | null;
}

/** The conversation a message goes to, and how it came to be open. */
export interface OpenConversation {
  conversation: ConversationRow;
  created: boolean;
  reopened: boolean;
}

/**
 * The open conversation of a contact on a channel, inside the caller's transaction: the latest one,
 * reopened when closed (writing `conversation_unarchived`), or a new one. Concurrent callers for the
 * same contact and channel take turns (advisory lock), so they never create two.
 */
export async function openConversation(
  trx: Db,
  businessId: string,
  target: { contactId: string; channel: string; channelId: string; tags?: string[] },
  by: OpenedBy,
): Promise<OpenConversation> {
  await messagingRepository.lock(trx, businessId, `conversation:${target.contactId}:${target.channelId}`);
  const found = await messagingRepository.findConversation(trx, businessId, target);
  if (!found) {
    const conversation = await messagingRepository.insertConversation(trx, {
      business_id: businessId,
      id: newId(),
      contact_id: target.contactId,
      channel: target.channel,
      channel_id: target.channelId,
      tags: target.tags ?? [],
    });
    return { conversation, created: true, reopened: false };
  }
  if (found.closed_at === null) {
    if (found.channel_id === null)
      await messagingRepository.bindConversation(trx, businessId, found.id, target.channelId);
    return { conversation: { ...found, channel_id: target.channelId }, created: false, reopened: false };
  }
  await messagingRepository.reopenConversation(trx, businessId, found.id, target.channelId);
  await writeEvents(trx, businessId, [
    {
      type: 'conversation_unarchived',
      contact_id: target.contactId,
      conversation_id: found.id,
      channel: found.channel,
      actor_type: by.actorType,
      user_id: by.userId ?? null,
      agent_id: by.agentId ?? null,
      data: { origin: by.origin },
    },
  ]);
  return { conversation: { ...found, closed_at: null, channel_id: target.channelId }, created: false, reopened: true };
}

/** A (contact, channel) pair whose open conversation is wanted; see openConversations. */
export interface ConversationTarget {
  contactId: string;
  channel: string;
  channelId: string;
  tags?: string[];
}

/**
 * openConversation for many (contact, channel) pairs of one business with one statement per step:
 * the locks (all at once, sorted), the latest conversations, the new ones. A closed conversation, or
 * one without a channel id, goes through openConversation (reopening writes its event). Answers the
 * open conversation of each pair, keyed `${contactId}:${channelId}`.
 */
export async function openConversations(
  trx: Db,
  businessId: string,
  targets: ConversationTarget[],
  by: OpenedBy,
): Promise<Map<string, ConversationRow>> {
  const unique = new Map<string, ConversationTarget>();
  for (const t of targets) unique.set(`${t.contactId}:${t.channelId}`, t);
  const keys = [...unique.keys()].sort();
  // The lock openConversation takes, for all pairs at once and in one order.
  await messagingRepository.lockMany(
    trx,
    keys.map((k) => ({ businessId, key: `conversation:${k}` })),
  );
  const found = await messagingRepository.findConversations(
    trx,
    businessId,
    keys.map((k) => ({
      contact_id: unique.get(k)!.contactId,
      channel: unique.get(k)!.channel,
      channel_id: unique.get(k)!.channelId,
    })),
  );
  const result = new Map<string, ConversationRow>();
  const missing: Insertable<ConversationsTable>[] = [];
  for (const key of keys) {
    const target = unique.get(key)!;
    const row = found.get(key);
    if (!row) {
      missing.push({
        business_id: businessId,
        id: newId(),
        contact_id: target.contactId,
        channel: target.channel,
        channel_id: target.channelId,
        tags: target.tags ?? [],
      });
    } else if (row.closed_at === null && row.channel_id === target.channelId) {
      result.set(key, row);
    } else {
      result.set(key, (await openConversation(trx, businessId, target, by)).conversation);
    }
  }
  for (const row of await messagingRepository.insertConversations(trx, missing))
    result.set(`${row.contact_id}:${row.channel_id}`, row);
  return result;
}
