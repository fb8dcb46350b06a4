import type { Updateable } from 'kysely';
import type { OutboundContent } from '../../channels/provider.ts';
import { channelKind } from '../../channels/registry.ts';
import { lockMany } from '../../db/advisory-locks.ts';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable, EventsTable } from '../../db/types.ts';
import { enqueueJobs } from '../../jobs/outbox.worker.ts';
import { newId } from '../../lib/ids.ts';
import type { NormalisedPhone } from '../../lib/phone.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';
import { contactIdentitiesRepository } from '../contacts/contact-identities.repository.ts';
import { identityKey, identityLockName, type AddressIdentity } from '../contacts/contact-identity.ts';
import { contactsRepository, type ContactRow, type NewMessageContact } from '../contacts/contacts.repository.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import type { ConversationRow } from '../conversations/conversation-store.repository.ts';
import { manualControlChange } from '../conversations/manual-control.ts';
import { conversationLockName, openConversations, type OpenedBy } from '../conversations/open-conversations.ts';
import { contactsChanged, conversationsChanged, messagesCreated } from '../domain-events/domain-events.writer.ts';
import { contactFieldChanged, writeEvents, type EventType } from '../events/events.writer.ts';
import { storeAnswerIn, type IdempotencyClaim } from '../idempotency/idempotency.service.ts';
import { messagesRepository, type NewMessage } from '../messages/messages.repository.ts';
import { channelOptOutField, isOptedOut } from '../contacts/channel-opt-outs.ts';
import { addressMoved, blocked, templateRequired, windowClosed } from './sending.content.ts';

/** Everything one send writes, decided and validated before the transaction. */
export interface SendPlan {
  businessId: string;
  channel: ChannelRow;
  recipient: NormalisedPhone;
  type: string;
  content: OutboundContent;
  text: string;
  metadata: Record<string, string>;
  /** The template sent; a template may go outside the service window, free-form content may not. */
  templateId?: string | null;
  optIn?: boolean;
  assignedUserId?: string;
  teamId?: string;
  botStatus?: 'bot_start' | 'bot_end';
  /** The reason its manual-control events carry, for an agent's send (default `ai_agent`). */
  botStatusReason?: string;
  agentId?: string;
  /** The send's hold on its Idempotency-Key: its plain answer (plainSendAnswer) is stored with it. */
  claim?: IdempotencyClaim;
  /**
   * The team member who wrote it in the dashboard: the message is stored with sender_type `human`
   * and the user, which is what keeps it from firing message_created (firesMessageCreated), and a
   * conversation the send reopens names the user. Without it the send is the public API's (`api`).
   */
  userId?: string;
  /**
   * The AI agent that wrote it (a run of the agent, src/modules/ai): stored with sender_type
   * `ai_agent` and the agent, and the changes it asks (bot_status) name the agent as their actor.
   */
  agentSenderId?: string;
  /**
   * The channel that relayed it: a person's reply written in a provider mirroring the business's
   * channels (RelayedReply). Stored with sender_type `human` and no user, like the dashboard's
   * replies firing no message_created webhook, and held to the window the kind gives people.
   */
  relayedBy?: string;
  /** The message this one answers (stored as reply_to_id). */
  replyToId?: string;
  /** The contact the recipient's address must name: a reply goes to its conversation's contact or nowhere. */
  contactId?: string;
}

/** The message written for a send, its contact and conversation, or why it was refused (nothing written then). */
export type SendOutcome = { messageId: string; contact: ContactRow; conversationId: string } | { refused: Error };

/** The answer of an accepted send that asks for no more than its message. */
export const plainSendAnswer = (messageId: string) => ({ message: { uuid: messageId, status: 'enqueued' as const } });

type NewEvent = Parameters<typeof writeEvents>[2][number];

/**
 * Writes sends (of any businesses; one is a batch of one) in the caller's transaction, with one
 * statement per step for all of them: the recipients' identity locks (the ones contact creation
 * takes, so a concurrent create or send cannot add a twin); the recipients, found by their identity
 * (a phone's key: country variants included); the refusals: an opted-out contact without an opt-in
 * (`blocked`), free-form content to a contact without an inbound message on the channel within its
 * kind's service window (`template_required`; a contact that does not exist yet has none; a kind
 * without a window takes free-form content always); the contacts a template (or a free-form send
 * without a window) creates;
 * the opt-ins; the open conversations (found, created, or reopened with their event) and the changes
 * a send asks of them (bot_status, assignment, team, agent, with their events); the PENDING messages
 * with their conversations' counters, their outbox jobs and their message_created events, in
 * arrival order. A refused send writes nothing and does not affect the others. Answers one outcome
 * per send.
 */
export async function acceptSends(trx: Db, sends: SendPlan[]): Promise<{ outcomes: SendOutcome[] }> {
  const outcomes: (SendOutcome | undefined)[] = sends.map(() => undefined);
  const lockOf = (s: SendPlan) => ({ businessId: s.businessId, key: identityLockName(recipientIdentity(s)) });
  const locks = new Map(sends.map((s) => [`${s.businessId}:${lockOf(s).key}`, lockOf(s)]));
  await lockMany(
    trx,
    [...locks.keys()].sort().map((k) => locks.get(k)!),
  );

  const businesses = [...new Set(sends.map((s) => s.businessId))].sort();
  const accepted: { i: number; businessId: string; messageId: string }[] = [];
  for (const businessId of businesses) {
    const mine = sends.flatMap((s, i) => (s.businessId === businessId ? [i] : []));
    const writable = await recipientsOf(trx, businessId, sends, mine, outcomes);
    if (writable.length === 0) continue;

    const pairKey = (w: Writable) => `${w.contact.id}:${sends[w.i].channel.id}`;
    const conversations = new Map<string, ConversationRow>();
    // Who reopens a closed conversation: the API, each team member replying from the dashboard, or an AI agent.
    for (const actor of new Set(writable.map((w) => actorKey(sends[w.i])))) {
      const mine = writable.filter((w) => actorKey(sends[w.i]) === actor);
      const opened = await openConversations(
        trx,
        businessId,
        mine.map((w) => ({
          contactId: w.contact.id,
          channel: sends[w.i].channel.type,
          channelId: sends[w.i].channel.id,
          tags: w.contact.tags,
        })),
        openedBy(sends[mine[0].i]),
      );
      for (const [key, row] of opened) conversations.set(key, row);
    }
    const rows: NewMessage[] = [];
    for (const w of writable) {
      const send = sends[w.i];
      let conversation = conversations.get(pairKey(w))!;
      conversation = await applyConversationChanges(trx, conversation, send);
      conversations.set(pairKey(w), conversation);
      const messageId = newId();
      rows.push(outboundMessageRow(send, messageId, { conversationId: conversation.id, contactId: w.contact.id }));
      outcomes[w.i] = { messageId, contact: w.contact, conversationId: conversation.id };
      accepted.push({ i: w.i, businessId, messageId });
    }
    await messagesRepository.insertMessages(trx, businessId, rows);
    await messagesCreated(
      trx,
      businessId,
      rows.map((r) => r.id),
    );
  }
  accepted.sort((a, b) => a.i - b.i);
  await enqueueJobs(
    trx,
    accepted.map((a) => ({ businessId: a.businessId, kind: 'send', refId: a.messageId })),
  );
  // A claim taken over fails the batch; the batcher then writes each send alone, and only that one fails.
  for (const a of accepted) await storeAnswerIn(trx, sends[a.i].claim, 200, plainSendAnswer(a.messageId));
  return { outcomes: outcomes.map((o) => o!) };
}

/** One send with its own transaction: a batch of one, whose refusal fails the transaction. */
export async function acceptOne(trx: Db, plan: SendPlan) {
  const [outcome] = (await acceptSends(trx, [plan])).outcomes;
  if ('refused' in outcome) throw outcome.refused;
  return outcome;
}

/**
 * The locks a send to a contact's conversation takes (acceptSends takes them again, which a holder
 * may), for a caller that reads the conversation under them first: the recipient's identity, then
 * the conversation of the plan's contact on its channel.
 */
export async function lockSendTarget(trx: Db, plan: SendPlan & { contactId: string }): Promise<void> {
  await lockMany(trx, [
    { businessId: plan.businessId, key: identityLockName(recipientIdentity(plan)) },
    { businessId: plan.businessId, key: conversationLockName(plan.contactId, plan.channel.id) },
  ]);
}

/** Sends of one actor open their conversations together. */
const actorKey = (send: SendPlan) =>
  send.userId !== undefined
    ? `user:${send.userId}`
    : send.relayedBy !== undefined
      ? `relay:${send.relayedBy}`
      : send.agentSenderId !== undefined
        ? `agent:${send.agentSenderId}`
        : 'api';

/** Who a send's conversation is opened (or reopened) by. */
function openedBy(send: SendPlan): OpenedBy {
  if (send.userId !== undefined) return { actorType: 'human', origin: 'dashboard', userId: send.userId };
  if (send.relayedBy !== undefined) return { actorType: 'human', origin: 'relay', userId: null };
  if (send.agentSenderId !== undefined)
    return { actorType: 'ai_agent', origin: 'ai_agent', agentId: send.agentSenderId };
  return { actorType: 'api', origin: 'api' };
}

/** The identity of a send's recipient: its address's key, of the address kind of the channel's provider. */
const recipientIdentity = (send: SendPlan): AddressIdentity => ({
  kind: channelKind(send.channel.provider_kind)!.address.kind,
  value: send.recipient.key,
});

/** A send that passed the checks, with its recipient. */
interface Writable {
  i: number;
  contact: ContactRow;
}

/**
 * The recipients of a business's sends (`mine`, by index), found or (for templates) created, after
 * the refusals (recorded in `outcomes`) and with the opt-ins recorded: the sends to write.
 */
async function recipientsOf(
  trx: Db,
  businessId: string,
  sends: SendPlan[],
  mine: number[],
  outcomes: (SendOutcome | undefined)[],
): Promise<Writable[]> {
  // The service window of the send's channel kind, in hours, when its content needs one: free-form
  // content on a kind that has a window (templates go outside it).
  const windowOf = (i: number): number | null =>
    sends[i].type === 'template' ? null : channelKind(sends[i].channel.provider_kind)!.capabilities.serviceWindowHours;
  const keyOf = (i: number) => identityKey(recipientIdentity(sends[i]));
  // Outside the window: a template is the way on a kind that has them; on others, nothing is.
  const windowRefusal = (i: number, hours: number) => {
    const { capabilities } = channelKind(sends[i].channel.provider_kind)!;
    return capabilities.templates ? templateRequired(hours) : windowClosed(hours, capabilities.humanWindowHours);
  };
  const contacts = await contactIdentitiesRepository.find(
    trx,
    businessId,
    mine.map((i) => recipientIdentity(sends[i])),
  );
  const candidates: number[] = [];
  for (const i of mine) {
    const contact = contacts.get(keyOf(i));
    const hours = windowOf(i);
    if (sends[i].contactId !== undefined && contact?.id !== sends[i].contactId)
      outcomes[i] = { refused: addressMoved() };
    else if (!contact) {
      if (hours !== null) outcomes[i] = { refused: windowRefusal(i, hours) };
      else candidates.push(i);
    } else if (isOptedOut(contact, sends[i].channel.type) && sends[i].optIn !== true)
      outcomes[i] = { refused: blocked() };
    else candidates.push(i);
  }
  const windowed = candidates.filter((i) => windowOf(i) !== null);
  // The send's contact and channel with a window's length in hours, as inServiceWindows takes them.
  const windowPair = (i: number, hours: number) => ({
    contact_id: contacts.get(keyOf(i))!.id,
    channel_id: sends[i].channel.id,
    channel: sends[i].channel.type,
    hours,
  });
  const open = await messagesRepository.inServiceWindows(
    trx,
    businessId,
    windowed.map((i) => windowPair(i, windowOf(i)!)),
  );
  // A person's send past the window may go within the kind's longer window for people, marked so.
  const humanHoursOf = (i: number) =>
    (sends[i].userId !== undefined || sends[i].relayedBy !== undefined) && sends[i].type !== 'template'
      ? channelKind(sends[i].channel.provider_kind)!.capabilities.humanWindowHours
      : undefined;
  const pairOf = (i: number) => `${contacts.get(keyOf(i))!.id}:${sends[i].channel.id}`;
  const late = windowed.filter((i) => !open.has(pairOf(i)) && humanHoursOf(i) !== undefined);
  const lateSet = new Set(late);
  const openToPeople = await messagesRepository.inServiceWindows(
    trx,
    businessId,
    late.map((i) => windowPair(i, humanHoursOf(i)!)),
  );
  const writable = candidates.filter((i) => {
    const hours = windowOf(i);
    if (hours === null || open.has(pairOf(i))) return true;
    if (lateSet.has(i) && openToPeople.has(pairOf(i))) {
      const content = sends[i].content;
      if (content.kind !== 'template') sends[i] = { ...sends[i], content: { ...content, extendedWindow: true } };
      return true;
    }
    outcomes[i] = { refused: windowRefusal(i, hours) };
    return false;
  });

  const created = new Map<string, NewMessageContact>();
  for (const i of writable) {
    const { recipient, channel } = sends[i];
    if (contacts.has(keyOf(i)) || created.has(keyOf(i))) continue;
    created.set(keyOf(i), {
      business_id: businessId,
      id: newId(),
      identity: recipientIdentity(sends[i]),
      address: recipient.digits,
      source: channel.type,
      tags: [],
    });
  }
  const inserted = await contactsRepository.insertMany(trx, [...created.values()]);
  const insertedById = new Map(inserted.map((c) => [c.id, c]));
  for (const [key, row] of created) contacts.set(key, insertedById.get(row.id)!);
  await contactsChanged(
    trx,
    businessId,
    inserted.map((c) => c.id),
    'created',
  );
  const result: Writable[] = [];
  for (const i of writable) {
    const key = keyOf(i);
    if (sends[i].optIn === true) contacts.set(key, await recordOptIn(trx, contacts.get(key)!, sends[i].channel.type));
    result.push({ i, contact: contacts.get(key)! });
  }
  return result;
}

/** The PENDING message row of an accepted send. */
function outboundMessageRow(
  send: SendPlan,
  messageId: string,
  to: { conversationId: string; contactId: string },
): NewMessage & { id: string } {
  return {
    business_id: send.businessId,
    id: messageId,
    conversation_id: to.conversationId,
    contact_id: to.contactId,
    channel: send.channel.type,
    channel_id: send.channel.id,
    direction: 'outbound',
    sender_type:
      send.userId !== undefined || send.relayedBy !== undefined
        ? 'human'
        : send.agentSenderId !== undefined
          ? 'ai_agent'
          : 'api',
    user_id: send.userId ?? null,
    agent_id: send.agentSenderId ?? null,
    type: send.type,
    text: send.text,
    status: 'PENDING',
    error: null,
    reply_to_id: send.replyToId ?? null,
    metadata: send.metadata,
    sender_address: send.channel.identifier,
    recipient_address: send.recipient.digits,
    template_id: send.templateId ?? null,
    outbound_content: send.content,
  };
}

/** Marks the contact as opted in on this channel (and no longer opted out of it or of all), with the time. */
async function recordOptIn(trx: Db, contact: ContactRow, channelType: string): Promise<ContactRow> {
  const before = contact.collected_data;
  const key = `${channelType}_opt_in`;
  const channelOut = channelOptOutField(channelType);
  const after: Record<string, unknown> = {
    ...before,
    [key]: true,
    [`${key}_at`]: new Date().toISOString(),
    ...(before.opted_out === true ? { opted_out: false } : {}),
    ...(before[channelOut] === true ? { [channelOut]: false } : {}),
  };
  const changed = [key, 'opted_out', channelOut].filter((k) => k in after && before[k] !== after[k]);
  if (changed.length === 0) return contact;
  const row = await contactsRepository.update(trx, contact.business_id, contact.id, {
    collected_data: after,
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
  const event = (type: EventType, data: Record<string, unknown>, agentId?: string): NewEvent => ({
    type,
    contact_id: conversation.contact_id,
    conversation_id: conversation.id,
    channel: conversation.channel,
    actor_type: (plan.agentSenderId !== undefined ? 'ai_agent' : 'api') satisfies EventsTable['actor_type'],
    user_id: null,
    agent_id: agentId ?? plan.agentSenderId ?? null,
    data,
  });
  if (plan.botStatus !== undefined) {
    const manual = manualControlChange(conversation, { active: plan.botStatus === 'bot_end' });
    if (manual.active !== conversation.manual_control) changes.manual_control = manual.active;
    if (manual.locked !== conversation.manual_control_locked) changes.manual_control_locked = manual.locked;
    const reason = plan.agentSenderId !== undefined ? (plan.botStatusReason ?? 'ai_agent') : 'api';
    for (const transition of manual.transitions) events.push(event(`manual_control_${transition}`, { reason }));
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
  return conversationOpsRepository.updateRow(trx, conversation.business_id, conversation.id, changes);
}
