import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import {
  contactChanges,
  conversationsChanged,
  type ConversationChange,
} from '../domain-events/domain-events.writer.ts';
import { eventsRepository, type NewEvent } from './events.repository.ts';

/**
 * The exported events of the contract. Operations call these inside their own transaction (pass the
 * `trx`), so an event exists exactly when the change it describes does.
 */
export const EVENT_TYPES = [
  'manual_control_activated',
  'manual_control_released',
  'manual_control_locked',
  'manual_control_unlocked',
  'alert_triggered',
  'transfer_accepted',
  'transfer_rejected',
  'transfer_fallback_required',
  'sentiment_analyzed',
  'conversation_archived',
  'conversation_unarchived',
  'conversation_resolved',
  'agent_assigned',
  'agent_switched',
  'agent_removed',
  'contact_field_changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The exported events a conversation's thread shows among its messages: manual control, transfers,
 * AI agent changes, resolution and archive.
 */
export const THREAD_EVENT_TYPES = [
  'manual_control_activated',
  'manual_control_released',
  'manual_control_locked',
  'manual_control_unlocked',
  'transfer_accepted',
  'transfer_rejected',
  'transfer_fallback_required',
  'agent_assigned',
  'agent_switched',
  'agent_removed',
  'conversation_resolved',
  'conversation_archived',
  'conversation_unarchived',
] as const satisfies readonly EventType[];

export interface FieldChange {
  field: string;
  custom: boolean;
  from: unknown;
  to: unknown;
}

type ConversationEventType = Exclude<EventType, 'contact_field_changed'>;

/**
 * The `conversation_changed` change of each exported event about a conversation: every one, so an
 * open dashboard hears of each (src/modules/live).
 */
const CONVERSATION_CHANGES: Record<ConversationEventType, ConversationChange> = {
  manual_control_activated: 'manual_control',
  manual_control_released: 'manual_control',
  manual_control_locked: 'manual_control',
  manual_control_unlocked: 'manual_control',
  alert_triggered: 'alert',
  transfer_accepted: 'transfer',
  transfer_rejected: 'transfer',
  transfer_fallback_required: 'transfer',
  sentiment_analyzed: 'sentiment',
  agent_assigned: 'assignment',
  agent_switched: 'assignment',
  agent_removed: 'assignment',
  conversation_resolved: 'resolution',
  conversation_archived: 'archive',
  conversation_unarchived: 'archive',
};

/**
 * Writes exported events and, in the same transaction, the domain events they stand for:
 * `conversation_changed` for those about a conversation (CONVERSATION_CHANGES), `contact_changed`
 * (updated) for contact_field_changed.
 */
export async function writeEvents(
  trx: Db,
  businessId: string,
  events: (NewEvent & { type: EventType })[],
): Promise<void> {
  await eventsRepository.insertMany(
    trx,
    events.map((e) => ({ ...e, business_id: businessId, id: newId() })),
  );
  const conversations = events.flatMap((e) => {
    const change = e.type === 'contact_field_changed' ? undefined : CONVERSATION_CHANGES[e.type];
    return change && e.conversation_id
      ? [{ conversationId: e.conversation_id, change, data: { event: e.type, actor_type: e.actor_type } }]
      : [];
  });
  await conversationsChanged(trx, businessId, conversations);
  await contactChanges(
    trx,
    businessId,
    events.flatMap((e) =>
      e.type === 'contact_field_changed' && e.contact_id
        ? [
            {
              contactId: e.contact_id,
              change: 'updated' as const,
              data: { source: e.data.source, fields: (e.data.changes as FieldChange[]).map((c) => c.field) },
            },
          ]
        : [],
    ),
  );
}

/** One `contact_field_changed` event groups every field changed by one operation. */
export function contactFieldChanged(
  trx: Db,
  businessId: string,
  change: {
    contactId: string;
    actorType: NewEvent['actor_type'];
    source: string;
    changes: FieldChange[];
    userId?: string | null;
    agentId?: string | null;
  },
): Promise<void> {
  if (change.changes.length === 0) return Promise.resolve();
  return writeEvents(trx, businessId, [
    {
      type: 'contact_field_changed',
      contact_id: change.contactId,
      conversation_id: null,
      channel: null,
      actor_type: change.actorType,
      user_id: change.userId ?? null,
      agent_id: change.agentId ?? null,
      data: { source: change.source, changes: change.changes },
    },
  ]);
}

/** The conversation an event is about (its contact and channel are copied onto the event). */
export interface EventConversation {
  id: string;
  contact_id: string;
  channel: string;
}

/** Who caused an event: `human` with a user from the dashboard (user null from the channel's own app). */
export interface EventActor {
  actorType: NewEvent['actor_type'];
  userId?: string | null;
  /** The AI agent that acted or is concerned, when known. */
  agentId?: string | null;
}

function conversationEvent(
  trx: Db,
  businessId: string,
  type: ConversationEventType,
  conversation: EventConversation,
  actor: EventActor,
  data: Record<string, unknown>,
) {
  return writeEvents(trx, businessId, [
    {
      type,
      contact_id: conversation.contact_id,
      conversation_id: conversation.id,
      channel: conversation.channel,
      actor_type: actor.actorType,
      user_id: actor.userId ?? null,
      agent_id: actor.agentId ?? null,
      data,
    },
  ]);
}

type Writer<D> = (
  trx: Db,
  businessId: string,
  conversation: EventConversation,
  actor: EventActor,
  data: D,
) => Promise<void>;
const writer =
  <D extends Record<string, unknown>>(type: ConversationEventType): Writer<D> =>
  (trx, businessId, conversation, actor, data) =>
    conversationEvent(trx, businessId, type, conversation, actor, data);

/** A person took over and the AI stopped replying. */
export const manualControlActivated = writer<{ reason: string | null }>('manual_control_activated');
/** The conversation returned to the AI, by hand or on a timer. */
export const manualControlReleased = writer<{ reason: string }>('manual_control_released');
/** Manual control pinned: the AI does not return on its own. */
export const manualControlLocked = writer<{ reason: string }>('manual_control_locked');
/** The pin was removed. */
export const manualControlUnlocked = writer<{ reason: string }>('manual_control_unlocked');
/** The conversation was escalated to the team with an alert. */
export const alertTriggered = writer<{ reason: string }>('alert_triggered');

/** What the three transfer events carry. */
export interface TransferData extends Record<string, unknown> {
  reason: string;
  /** The person or number the AI tried to transfer to (null when none was available). */
  target_user: string | null;
  attempt_number: number;
}
/** The AI transferred the conversation to a person or another number. */
export const transferAccepted = writer<TransferData>('transfer_accepted');
/** A transfer could not be made. */
export const transferRejected = writer<TransferData>('transfer_rejected');
/** No transfer target was available. */
export const transferFallbackRequired = writer<TransferData>('transfer_fallback_required');

export const SENTIMENTS = ['POSITIVE', 'NEUTRAL', 'NEGATIVE'] as const;
/** The conversation's sentiment was analyzed. */
export const sentimentAnalyzed: Writer<{ sentiment: (typeof SENTIMENTS)[number] }> = (
  trx,
  businessId,
  conversation,
  actor,
  data,
) => {
  // A runtime guard as well: the value comes from a model's output.
  if (!SENTIMENTS.includes(data.sentiment))
    return Promise.reject(new Error(`sentiment must be one of ${SENTIMENTS.join(', ')}`));
  return conversationEvent(trx, businessId, 'sentiment_analyzed', conversation, actor, data);
};

/** The conversation was archived (closed); `origin` says through what (api, dashboard, timer, ...). */
export const conversationArchived = writer<{ origin: string }>('conversation_archived');
/** The conversation was unarchived (reopened). */
export const conversationUnarchived = writer<{ origin: string }>('conversation_unarchived');
/** A person marked the case resolved. */
export const conversationResolved = writer<{ reason: string | null }>('conversation_resolved');

/** What the three agent events carry: the AI agent before and after. */
export interface AgentChange extends Record<string, unknown> {
  from_agent: string | null;
  to_agent: string | null;
}
/** An AI agent was assigned to a conversation that had none. */
export const agentAssigned = writer<AgentChange>('agent_assigned');
/** The conversation's AI agent changed. */
export const agentSwitched = writer<AgentChange>('agent_switched');
/** The AI agent was removed. */
export const agentRemoved = writer<AgentChange>('agent_removed');

/** The right one of agent_assigned / agent_switched / agent_removed for a change, or nothing when there is none. */
export function agentChanged(
  trx: Db,
  businessId: string,
  conversation: EventConversation,
  actor: EventActor,
  change: AgentChange,
): Promise<void> {
  if (change.from_agent === change.to_agent) return Promise.resolve();
  const write = change.from_agent === null ? agentAssigned : change.to_agent === null ? agentRemoved : agentSwitched;
  return write(
    trx,
    businessId,
    conversation,
    { ...actor, agentId: actor.agentId ?? change.to_agent ?? change.from_agent },
    change,
  );
}
