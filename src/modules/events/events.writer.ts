import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
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

export interface FieldChange {
  field: string;
  custom: boolean;
  from: unknown;
  to: unknown;
}

export function writeEvents(trx: Db, businessId: string, events: (NewEvent & { type: EventType })[]): Promise<void> {
  return eventsRepository.insertMany(trx, events.map((e) => ({ ...e, business_id: businessId, id: newId() })));
}

/** One `contact_field_changed` event groups every field changed by one operation. */
export function contactFieldChanged(
  trx: Db,
  businessId: string,
  change: { contactId: string; actorType: NewEvent['actor_type']; source: string; changes: FieldChange[]; userId?: string | null },
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
      agent_id: null,
      data: { source: change.source, changes: change.changes },
    },
  ]);
}
