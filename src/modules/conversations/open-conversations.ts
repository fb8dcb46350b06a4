import { primaryChannelTypes } from '../../channels/registry.ts';
import { lockMany } from '../../db/advisory-locks.ts';
import type { Db } from '../../db/database.ts';
import type { EventsTable } from '../../db/types.ts';
import { newId } from '../../lib/ids.ts';
import { channelsRepository } from '../channels/channels.repository.ts';
import { writeEvents } from '../events/events.writer.ts';
import {
  conversationStoreRepository,
  type ConversationRow,
  type NewConversation,
} from './conversation-store.repository.ts';

/** Who causes a conversation to open, for the `conversation_unarchived` event a reopening writes. */
export interface OpenedBy {
  actorType: EventsTable['actor_type'];
  /** `data.origin` of the event, e.g. `inbound_message` or `api`. */
  origin: string;
  userId?: string | null;
  agentId?: string | null;
}

/** A (contact, channel) pair whose open conversation is wanted. */
export interface ConversationTarget {
  contactId: string;
  channel: string;
  channelId: string;
  tags?: string[];
}

/** The lock name of a (contact, channel) pair's conversation (inboundRepository.sendersByIdentity takes the same). */
export const conversationLockName = (contactId: string, channelId: string) => `conversation:${contactId}:${channelId}`;

/**
 * The open conversation of each (contact, channel) pair of one business, inside the caller's
 * transaction, keyed `${contactId}:${channelId}`: the latest one (of the channel, else of its type
 * without a channel id, which is then bound to the channel), reopened when closed (writing
 * `conversation_unarchived`), or a new one, which gets its channel's default AI agent (writing
 * `agent_assigned`, actor system). One statement per step for all pairs: the locks, the
 * latest conversations, the new ones; a reopening or a binding is one more each. Concurrent callers
 * for the same pair take turns (advisory lock, all pairs in one sorted order), so they never create
 * two; `locksHeld` when the caller took them already (the inbound sender lookup does). A channel
 * that keeps its conversations on its number's primary channel (homesOf) opens that channel's.
 */
export async function openConversations(
  trx: Db,
  businessId: string,
  targets: ConversationTarget[],
  by: OpenedBy,
  options: { locksHeld?: boolean } = {},
): Promise<Map<string, ConversationRow>> {
  const pairKey = (t: ConversationTarget) => `${t.contactId}:${t.channelId}`;
  const homes = await homesOf(trx, businessId, targets);
  const unique = new Map<string, ConversationTarget>();
  for (const t of homes) unique.set(pairKey(t), t);
  const keys = [...unique.keys()].sort();
  // A caller holding its pairs' locks holds none of a primary channel's pair.
  const held = new Set(options.locksHeld ? targets.map(pairKey) : []);
  await lockMany(
    trx,
    keys
      .filter((k) => !held.has(k))
      .map((k) => ({ businessId, key: conversationLockName(unique.get(k)!.contactId, unique.get(k)!.channelId) })),
  );
  const found = await conversationStoreRepository.findLatest(
    trx,
    businessId,
    keys.map((k) => ({
      contact_id: unique.get(k)!.contactId,
      channel: unique.get(k)!.channel,
      channel_id: unique.get(k)!.channelId,
    })),
  );
  const result = new Map<string, ConversationRow>();
  const missing: NewConversation[] = [];
  const reopened: ConversationRow[] = [];
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
    } else if (row.closed_at !== null) {
      await conversationStoreRepository.reopen(trx, businessId, row.id, target.channelId);
      reopened.push(row);
      result.set(key, { ...row, closed_at: null, channel_id: target.channelId });
    } else {
      if (row.channel_id === null) await conversationStoreRepository.bind(trx, businessId, row.id, target.channelId);
      result.set(key, { ...row, channel_id: target.channelId });
    }
  }
  if (reopened.length > 0)
    await writeEvents(
      trx,
      businessId,
      reopened.map((row) => ({
        type: 'conversation_unarchived',
        contact_id: row.contact_id,
        conversation_id: row.id,
        channel: row.channel,
        actor_type: by.actorType,
        user_id: by.userId ?? null,
        agent_id: by.agentId ?? null,
        data: { origin: by.origin },
      })),
    );
  const created = await conversationStoreRepository.insertMany(trx, missing);
  for (const row of created) result.set(`${row.contact_id}:${row.channel_id}`, row);
  // A new conversation of a channel with a default agent has it from the start: the system assigned it.
  const withAgent = created.filter((row) => row.agent_id !== null);
  if (withAgent.length > 0)
    await writeEvents(
      trx,
      businessId,
      withAgent.map((row) => ({
        type: 'agent_assigned',
        contact_id: row.contact_id,
        conversation_id: row.id,
        channel: row.channel,
        actor_type: 'system',
        user_id: null,
        agent_id: row.agent_id,
        data: { from_agent: null, to_agent: row.agent_id },
      })),
    );
  return new Map(targets.map((t, i) => [pairKey(t), result.get(pairKey(homes[i]))!]));
}

/**
 * The pair whose conversation each target's is: its own, or, for a channel whose kind keeps its
 * conversations on the primary channel of the same identifier (ChannelKind.primaryChannelType: a
 * WhatsApp number linked as a device and on the Cloud API too), that channel's.
 */
async function homesOf(trx: Db, businessId: string, targets: ConversationTarget[]): Promise<ConversationTarget[]> {
  let homes = targets;
  for (const [type, primaryType] of primaryChannelTypes) {
    const ids = [...new Set(targets.filter((t) => t.channel === type).map((t) => t.channelId))];
    if (ids.length === 0) continue;
    const primaries = await channelsRepository.sameIdentifier(trx, businessId, ids, primaryType);
    homes = homes.map((t) => {
      const primary = t.channel === type ? primaries.get(t.channelId) : undefined;
      return primary ? { ...t, channel: primary.type, channelId: primary.id } : t;
    });
  }
  return homes;
}
