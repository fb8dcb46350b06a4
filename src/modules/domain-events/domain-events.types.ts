import type { Db } from '../../db/database.ts';

/**
 * What happened in the core, for the code that reacts to it after the commit. Not the contract's
 * exported events (`events` table, GET /events): those are part of the public API.
 */
export const DOMAIN_EVENT_TYPES = [
  /** A message was stored (inbound, or accepted for sending); subject: the message. */
  'message_created',
  /** A receipt or the send job moved a message's status; subject: the message, `data.status` the new one. */
  'message_status_changed',
  /**
   * A message changed after it was stored, its status aside: a call's details (its duration), a file
   * that came later (its recording), a transcript (`data.change`); subject: the message.
   */
  'message_changed',
  /**
   * Manual control, assignment, resolution, archive, an alert, a transfer or a sentiment
   * (`data.change`, and `data.event` the exported event it stands for); subject: the conversation.
   */
  'conversation_changed',
  /** Creation, update, merge or deletion of a contact (`data.change`); subject: the contact. */
  'contact_changed',
] as const;
export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

export interface DomainEvent {
  /** Events of one conversation are numbered in the order they were committed. */
  id: number;
  businessId: string;
  type: DomainEventType;
  conversationId: string | null;
  subjectId: string;
  data: Record<string, unknown>;
  createdAt: string;
}

/** Called after the commit of a subscriber's batch (wake a worker, tell listeners). */
export type AfterCommit = () => void;

/**
 * Code that reacts to domain events, registered by name with the types it takes
 * (DomainEventDispatcher.register). It receives every event of those types committed after its
 * registration, once, in order per conversation, in batches. `handle` runs inside the transaction
 * that moves the subscriber's position past the batch: what it writes with `trx` is committed with
 * that move or not at all (exactly once); an effect outside the database may be repeated after a
 * crash (at least once). A failure rolls the batch back; it is handed over again later.
 *
 * Registered: webhook deliveries (`message_created`), the dashboards' live stream (every type,
 * src/modules/live), the AI agent (`message_created` from a contact, scheduling its run job with
 * `trx`, src/modules/ai), its timers (`message_created` and `conversation_changed`, scheduling
 * their jobs with `trx`) and mirroring (`message_created` from a contact, its `mirror` jobs with
 * `trx`). The slot that is coming:
 * - search indexing: `message_created` and `contact_changed`, writing its index rows or embedding
 *   jobs with `trx`.
 */
export interface Subscriber {
  /** Unique and stable: the subscriber's position is stored under it. */
  name: string;
  types: readonly DomainEventType[];
  /** Most events handed over in one call (default 500). */
  batchSize?: number;
  handle(events: DomainEvent[], trx: Db): Promise<AfterCommit | void>;
}
