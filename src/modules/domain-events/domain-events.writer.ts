import type { Db } from '../../db/database.ts';
import { domainEventsRepository } from './domain-events.repository.ts';

/**
 * The writes of domain events, each inside the transaction that causes the event (pass its `trx`),
 * so an event exists exactly when its cause committed. Subscribers receive them after the commit
 * (DomainEventDispatcher); a service that wants them handed over before it answers awaits
 * dispatch() after its commit.
 */

/** `message_created` for messages stored in this transaction, in the order given (their order per conversation). */
export function messagesCreated(trx: Db, businessId: string, messageIds: readonly string[]): Promise<void> {
  return domainEventsRepository.insertForMessages(
    trx,
    businessId,
    'message_created',
    messageIds.map((id) => ({ id })),
  );
}

/** `message_status_changed` for each status move of this transaction, in order (a message may move twice). */
export function messageStatusesChanged(
  trx: Db,
  businessId: string,
  moves: readonly { id: string; status: string }[],
): Promise<void> {
  return domainEventsRepository.insertForMessages(trx, businessId, 'message_status_changed', moves);
}

/** What changed in a message after it was stored. */
export type MessageChange = 'details' | 'attachment' | 'transcript';

/** `message_changed` for messages this transaction changed after they were stored, in order. */
export function messagesChanged(
  trx: Db,
  businessId: string,
  changes: readonly { id: string; change: MessageChange }[],
): Promise<void> {
  return domainEventsRepository.insertForMessages(trx, businessId, 'message_changed', changes);
}

/** What changed in a conversation. */
export type ConversationChange =
  'manual_control' | 'assignment' | 'resolution' | 'archive' | 'alert' | 'transfer' | 'sentiment';

/** `conversation_changed` for conversations this transaction changed (and holds locked). */
export function conversationsChanged(
  trx: Db,
  businessId: string,
  changes: readonly { conversationId: string; change: ConversationChange; data?: Record<string, unknown> }[],
): Promise<void> {
  return domainEventsRepository.insert(
    trx,
    changes.map((c) => ({
      businessId,
      type: 'conversation_changed',
      conversationId: c.conversationId,
      subjectId: c.conversationId,
      data: { change: c.change, ...c.data },
    })),
  );
}

/** What happened to a contact. */
export type ContactChange = 'created' | 'updated' | 'merged' | 'deleted';

/** `contact_changed` for contacts this transaction changed, each with data of its own, in one statement. */
export function contactChanges(
  trx: Db,
  businessId: string,
  changes: readonly { contactId: string; change: ContactChange; data?: Record<string, unknown> }[],
): Promise<void> {
  return domainEventsRepository.insert(
    trx,
    changes.map((c) => ({
      businessId,
      type: 'contact_changed',
      conversationId: null,
      subjectId: c.contactId,
      data: { change: c.change, ...c.data },
    })),
  );
}

/** `contact_changed` for contacts this transaction created, updated, merged or deleted. */
export function contactsChanged(
  trx: Db,
  businessId: string,
  contactIds: readonly string[],
  change: ContactChange,
  data: Record<string, unknown> = {},
): Promise<void> {
  return domainEventsRepository.insert(
    trx,
    contactIds.map((id) => ({
      businessId,
      type: 'contact_changed',
      conversationId: null,
      subjectId: id,
      data: { change, ...data },
    })),
  );
}
