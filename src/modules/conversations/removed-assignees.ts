import type { Db } from '../../db/database.ts';
import { conversationsChanged } from '../domain-events/domain-events.writer.ts';
import type { EventActor } from '../events/events.writer.ts';
import { conversationOpsRepository } from './conversation-ops.repository.ts';

/** A user removed from the business, or a team deleted. */
export type RemovedAssignee = { userId: string } | { teamId: string };

/**
 * Takes a removed user or a deleted team off every conversation of the business, in the caller's
 * transaction (the one that removes them), with a conversation_changed (assignment) for each so open
 * dashboards update; the contract has no exported event for a user's or a team's assignment.
 * Answers how many conversations it changed.
 */
export async function unassignConversations(
  trx: Db,
  businessId: string,
  removed: RemovedAssignee,
  actor: EventActor,
): Promise<number> {
  const [column, id, reason] =
    'userId' in removed
      ? (['assigned_user_id', removed.userId, 'user_removed'] as const)
      : (['team_id', removed.teamId, 'team_deleted'] as const);
  const changed = await conversationOpsRepository.unassign(trx, businessId, column, id);
  await conversationsChanged(
    trx,
    businessId,
    changed.map((c) => ({
      conversationId: c.id,
      change: 'assignment' as const,
      data: { actor_type: actor.actorType, user_id: actor.userId ?? null, reason },
    })),
  );
  return changed.length;
}
