import type { Db } from '../../db/database.ts';
import { writeEvents, type EventActor } from '../events/events.writer.ts';
import { contactsRepository } from './contacts.repository.ts';

/**
 * Takes a removed user off every contact of the business assigned to them, in the caller's
 * transaction (the one that removes them), with one contact_field_changed (assigned_user, source
 * `user_removed`) per contact, as an edit that unassigns it writes, and its contact_changed.
 */
export async function unassignContacts(
  trx: Db,
  businessId: string,
  user: { id: string; email: string },
  actor: EventActor,
): Promise<number> {
  const changed = await contactsRepository.unassignUser(trx, businessId, user.id);
  await writeEvents(
    trx,
    businessId,
    changed.map((c) => ({
      type: 'contact_field_changed' as const,
      contact_id: c.id,
      conversation_id: null,
      channel: null,
      actor_type: actor.actorType,
      user_id: actor.userId ?? null,
      agent_id: null,
      data: {
        source: 'user_removed',
        changes: [{ field: 'assigned_user', custom: false, from: user.email, to: null }],
      },
    })),
  );
  return changed.length;
}
