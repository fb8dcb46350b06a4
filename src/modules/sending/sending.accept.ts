import type { Insertable, Updateable } from 'kysely';
import type { OutboundContent } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable, EventsTable, MessagesTable } from '../../db/types.ts';
import { enqueueJob } from '../../jobs/outbox.worker.ts';
import { contactsChanged, conversationsChanged, messagesCreated } from '../domain-events/domain-events.writer.ts';
import { newId } from '../../lib/ids.ts';
import type { NormalisedPhone } from '../../lib/phone.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';
import { contactsRepository, type ContactRow } from '../contacts/contacts.repository.ts';
import { contactFieldChanged, writeEvents, type EventType } from '../events/events.writer.ts';
import { openConversation } from '../messaging/messaging.conversations.ts';
import { messagingRepository } from '../messaging/messaging.repository.ts';
import { blocked, templateRequired } from './sending.content.ts';
import { sendingRepository, type ConversationRow } from './sending.repository.ts';

/** Everything one accepted send writes, decided and validated before the transaction. */
export interface SendPlan {
  channel: ChannelRow;
  recipient: NormalisedPhone;
  type: string;
  content: OutboundContent;
  text: string;
  templateId: string | null;
  metadata: Record<string, string>;
  /** Free-form content: only within 24 hours of the contact's last inbound message. */
  freeForm: boolean;
  optIn: boolean;
  assignedUserId?: string;
  teamId?: string;
  botStatus?: 'bot_start' | 'bot_end';
  agentId?: string;
}

export interface AcceptedSend {
  messageId: string;
  contact: ContactRow;
  /** Read again by callers that show it (the message insert moved its counters). */
  conversationId: string;
}

type NewEvent = Parameters<typeof writeEvents>[2][number];

/**
 * Writes one send in the caller's transaction: the recipient contact (found by phone key, country
 * variants included, or created), its open conversation and the requested changes to it, the
 * events, the PENDING message, its outbox job and its message_created domain event. The workers
 * and the event's subscribers act on them after the commit.
 */
export async function acceptSend(trx: Db, businessId: string, plan: SendPlan): Promise<AcceptedSend> {
  const { channel, recipient } = plan;
  // The same lock key as contact creation, so a concurrent create or send cannot add a twin.
  await contactsRepository.lockIdentifiers(trx, businessId, [recipientLockName(recipient)]);
  const found = (await messagingRepository.contactsByPhoneKey(trx, businessId, [recipient.key])).get(recipient.key);
  let contact = found;
  if (!contact) {
    contact = await contactsRepository.insert(trx, {
      business_id: businessId,
      id: newId(),
      phone_number: recipient.digits,
      phone_key: recipient.key,
      source: channel.type,
      tags: [],
    });
    await contactsChanged(trx, businessId, [contact.id], 'created');
  }
  if (contact.collected_data.opted_out === true && !plan.optIn) throw blocked();
  if (plan.optIn) contact = await recordOptIn(trx, contact, channel.type);
  if (plan.freeForm && !(await sendingRepository.inServiceWindow(trx, businessId, contact.id, channel)))
    throw templateRequired();

  const opened = await openConversation(
    trx,
    businessId,
    { contactId: contact.id, channel: channel.type, channelId: channel.id, tags: contact.tags },
    { actorType: 'api', origin: 'api' },
  );
  const conversation = await applyConversationChanges(trx, opened.conversation, plan);

  const messageId = newId();
  await messagingRepository.insertMessage(
    trx,
    outboundMessageRow(businessId, messageId, plan, { conversationId: conversation.id, contactId: contact.id }),
  );
  await enqueueJob(trx, { businessId, kind: 'send', refId: messageId });
  await messagesCreated(trx, businessId, [messageId]);
  return { messageId, contact, conversationId: conversation.id };
}

/** The advisory-lock name of a recipient's phone: the one contact creation takes (contactsRepository.lockIdentifiers). */
export const recipientLockName = (recipient: NormalisedPhone) => `phone_number:${recipient.key}`;

/** The PENDING message row of an accepted send. */
export function outboundMessageRow(
  businessId: string,
  messageId: string,
  plan: Pick<SendPlan, 'channel' | 'recipient' | 'type' | 'content' | 'text' | 'metadata' | 'templateId'>,
  to: { conversationId: string; contactId: string },
): Insertable<MessagesTable> {
  return {
    business_id: businessId,
    id: messageId,
    conversation_id: to.conversationId,
    contact_id: to.contactId,
    channel: plan.channel.type,
    channel_id: plan.channel.id,
    direction: 'outbound',
    sender_type: 'api',
    user_id: null,
    agent_id: null,
    type: plan.type,
    text: plan.text,
    status: 'PENDING',
    error: null,
    reply_to_id: null,
    metadata: plan.metadata,
    sender_address: plan.channel.identifier,
    recipient_address: plan.recipient.digits,
    template_id: plan.templateId,
    outbound_content: JSON.stringify(plan.content),
  };
}

/** Marks the contact as opted in on this channel (and no longer opted out), with the time. */
async function recordOptIn(trx: Db, contact: ContactRow, channelType: string): Promise<ContactRow> {
  const before = contact.collected_data;
  const key = `${channelType}_opt_in`;
  const after: Record<string, unknown> = {
    ...before,
    [key]: true,
    [`${key}_at`]: new Date().toISOString(),
    ...(before.opted_out === true ? { opted_out: false } : {}),
  };
  const changed = [key, 'opted_out'].filter((k) => k in after && before[k] !== after[k]);
  if (changed.length === 0) return contact;
  const row = await contactsRepository.update(trx, contact.business_id, contact.id, {
    collected_data: JSON.stringify(after),
  });
  await contactFieldChanged(trx, contact.business_id, {
    contactId: contact.id,
    actorType: 'api',
    source: 'api',
    changes: changed.map((k) => ({
      field: `collected_data.${k}`,
      custom: false,
      from: before[k] ?? null,
      to: after[k],
    })),
  });
  return row;
}

/** bot_status, assignment, team and agent of the send, with the events of what changed. */
async function applyConversationChanges(
  trx: Db,
  conversation: ConversationRow,
  plan: SendPlan,
): Promise<ConversationRow> {
  const changes: Updateable<ConversationsTable> = {};
  const events: NewEvent[] = [];
  const event = (type: EventType, data: Record<string, unknown>, agentId: string | null = null): NewEvent => ({
    type,
    contact_id: conversation.contact_id,
    conversation_id: conversation.id,
    channel: conversation.channel,
    actor_type: 'api' satisfies EventsTable['actor_type'],
    user_id: null,
    agent_id: agentId,
    data,
  });
  const manual = plan.botStatus === undefined ? undefined : plan.botStatus === 'bot_end';
  if (manual !== undefined && manual !== conversation.manual_control) {
    changes.manual_control = manual;
    // A pin implies manual control: releasing it removes the pin, as the operator API does.
    if (!manual && conversation.manual_control_locked) {
      changes.manual_control_locked = false;
      events.push(event('manual_control_unlocked', { reason: 'api' }));
    }
    events.push(event(manual ? 'manual_control_activated' : 'manual_control_released', { reason: 'api' }));
  }
  if (plan.assignedUserId !== undefined && plan.assignedUserId !== conversation.assigned_user_id)
    changes.assigned_user_id = plan.assignedUserId;
  if (plan.teamId !== undefined && plan.teamId !== conversation.team_id) changes.team_id = plan.teamId;
  // Manual control and the agent have their exported events, which write conversation_changed too.
  if (changes.assigned_user_id !== undefined || changes.team_id !== undefined)
    await conversationsChanged(trx, conversation.business_id, [
      { conversationId: conversation.id, change: 'assignment', data: { origin: 'api' } },
    ]);
  if (plan.agentId !== undefined && plan.agentId !== conversation.agent_id) {
    changes.agent_id = plan.agentId;
    const from = conversation.agent_id;
    events.push(
      event(
        from === null ? 'agent_assigned' : 'agent_switched',
        { from_agent: from, to_agent: plan.agentId },
        plan.agentId,
      ),
    );
  }
  if (events.length > 0) await writeEvents(trx, conversation.business_id, events);
  if (Object.keys(changes).length === 0) return conversation;
  return sendingRepository.updateConversation(trx, conversation.business_id, conversation.id, changes);
}
