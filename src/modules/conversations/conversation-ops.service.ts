import type { Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable } from '../../db/types.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { agentsRepository } from '../agents/agents.repository.ts';
import { manualControlChange } from './manual-control.ts';
import { usersRepository } from '../users/users.repository.ts';
import { teamsRepository } from '../teams/teams.repository.ts';
import { conversationsChanged } from '../domain-events/domain-events.writer.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { conversationOpsRepository, type OpsConversationRow } from './conversation-ops.repository.ts';
import * as events from '../events/events.writer.ts';

/**
 * A change of a conversation's assignment: its team (the queue), its user (the person working it)
 * and its AI agent are three separate things. A field given is set (null clears it); one left out is kept.
 */
export interface AssigneeChange {
  user_id?: string | null;
  team_id?: string | null;
  agent_id?: string | null;
}

/** What a timer's operation did: acted, or nothing, or nothing yet (due again in `dueInSeconds`). */
export interface TimerOutcome {
  acted: boolean;
  dueInSeconds?: number;
}

/** Who acts through the operator API: a team member (dashboard) when `user_id` is given, else the system. */
export interface OpsActor {
  user_id?: string;
}

/**
 * Conversation operations of the dashboard and the operator API (resolve, manual control,
 * archive, AI agent), each writing its exported event in the same transaction (and with it the
 * conversation_changed domain event, see events.writer.ts), handed to subscribers before the answer.
 */
export class ConversationOpsService {
  constructor(
    private readonly db: Db,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  resolve(businessId: string, id: string, body: OpsActor & { reason?: string }) {
    return this.run(businessId, id, body, (trx, row, actor) =>
      resolveConversation(trx, businessId, row, actor, body.reason ?? null),
    );
  }

  /** Manual control on/off and pinned/unpinned; a pin implies manual control, a release removes the pin. */
  manualControl(
    businessId: string,
    id: string,
    body: OpsActor & { active?: boolean; locked?: boolean; reason?: string },
  ) {
    if (body.active === undefined && body.locked === undefined) throw invalid('send active, locked or both');
    if (body.active === false && body.locked === true)
      throw invalid('a pinned conversation stays under manual control');
    return this.run(businessId, id, body, async (trx, row, actor) => {
      const reason = body.reason ?? 'dashboard';
      const { active, locked, transitions } = manualControlChange(row, body);
      for (const transition of transitions) {
        if (transition === 'activated')
          await events.manualControlActivated(trx, businessId, row, actor, { reason: body.reason ?? null });
        else if (transition === 'locked') await events.manualControlLocked(trx, businessId, row, actor, { reason });
        else if (transition === 'unlocked') await events.manualControlUnlocked(trx, businessId, row, actor, { reason });
        else await events.manualControlReleased(trx, businessId, row, actor, { reason });
      }
      if (transitions.length === 0) return row;
      return conversationOpsRepository.update(trx, businessId, id, {
        manual_control: active,
        manual_control_locked: locked,
      });
    });
  }

  archive(businessId: string, id: string, body: OpsActor, archived: boolean) {
    return this.run(businessId, id, body, async (trx, row, actor) => {
      if ((row.closed_at !== null) === archived) return row;
      const origin = body.user_id ? 'dashboard' : 'system';
      if (archived) await events.conversationArchived(trx, businessId, row, actor, { origin });
      else await events.conversationUnarchived(trx, businessId, row, actor, { origin });
      return conversationOpsRepository.setClosed(trx, businessId, id, archived);
    });
  }

  /** Sets (or with null removes) the conversation's AI agent: agent_assigned, agent_switched or agent_removed. */
  setAgent(businessId: string, id: string, body: OpsActor & { agent_id: string | null }) {
    return this.assign(businessId, id, {
      ...(body.user_id !== undefined ? { user_id: body.user_id } : {}),
      assignee: { agent_id: body.agent_id },
    });
  }

  /**
   * Sets the fields of the conversation's assignment that `assignee` names (null clears one) and
   * keeps the others. The AI agent's change writes its event (agent_assigned, _switched, _removed);
   * the contract has no event for a user or a team, whose change writes only conversation_changed
   * (assignment), once per operation. The user and the team named are held until the commit, so a
   * removal of either, which unassigns them, cannot miss this assignment.
   */
  assign(businessId: string, id: string, body: OpsActor & { assignee: AssigneeChange }) {
    const { assignee } = body;
    if (assignee.user_id === undefined && assignee.team_id === undefined && assignee.agent_id === undefined)
      throw invalid('name user_id, team_id or agent_id (null clears it)');
    return this.run(businessId, id, body, (trx, row, actor) =>
      assignConversation(trx, businessId, row, actor, assignee),
    );
  }

  /**
   * What an AI agent's inactivity settings do to a conversation quiet for `afterSeconds`, by the
   * system for the agent: resolve it (conversation_resolved, reason inactivity) or archive it
   * (conversation_archived, origin timer). Read again under the conversation's lock: nothing when it
   * closed, its agent changed, or it was resolved since its last message; a message since answers
   * when it is due now.
   */
  afterInactivity(
    businessId: string,
    id: string,
    timer: { agentId: string; action: 'resolve' | 'archive'; afterSeconds: number },
  ): Promise<TimerOutcome> {
    return this.onTimer(businessId, id, timer.agentId, async (trx, row, actor) => {
      if (row.closed_at !== null) return { acted: false };
      const quiet = await conversationOpsRepository.quietState(trx, businessId, id);
      if (quiet.quiet_seconds < timer.afterSeconds)
        return { acted: false, dueInSeconds: timer.afterSeconds - quiet.quiet_seconds };
      if (timer.action === 'archive') {
        await events.conversationArchived(trx, businessId, row, actor, { origin: 'timer' });
        await conversationOpsRepository.setClosed(trx, businessId, id, true);
      } else {
        if (quiet.resolved_since) return { acted: false };
        await resolveConversation(trx, businessId, row, actor, 'inactivity');
      }
      return { acted: true };
    });
  }

  /**
   * Returns the conversation to its AI agent `afterSeconds` after manual control was last turned on
   * or unpinned (manual_control_released, reason timer, by the system for the agent). Read again
   * under the conversation's lock: nothing when it is no longer under manual control, is pinned, or
   * its agent changed; a newer activation answers when it is due now.
   */
  releaseOnTimer(businessId: string, id: string, timer: { agentId: string; afterSeconds: number }) {
    return this.onTimer(businessId, id, timer.agentId, async (trx, row, actor): Promise<TimerOutcome> => {
      if (!row.manual_control || row.manual_control_locked) return { acted: false };
      const age = await conversationOpsRepository.manualControlAge(trx, businessId, id);
      if (age === null) return { acted: false };
      if (age < timer.afterSeconds) return { acted: false, dueInSeconds: timer.afterSeconds - age };
      const { active, locked, transitions } = manualControlChange(row, { active: false });
      for (const transition of transitions)
        if (transition === 'released')
          await events.manualControlReleased(trx, businessId, row, actor, { reason: 'timer' });
      await conversationOpsRepository.update(trx, businessId, id, {
        manual_control: active,
        manual_control_locked: locked,
      });
      return { acted: true };
    });
  }

  /** A timer's operation: the conversation locked, its agent still `agentId`, the system acting for it. */
  private async onTimer(
    businessId: string,
    id: string,
    agentId: string,
    op: (trx: Db, row: OpsConversationRow, actor: events.EventActor) => Promise<TimerOutcome>,
  ): Promise<TimerOutcome> {
    const outcome = await this.db.transaction().execute(async (trx) => {
      const row = await conversationOpsRepository.findForUpdate(trx, businessId, id);
      if (!row || row.agent_id !== agentId) return { acted: false };
      return op(trx, row, { actorType: 'system', agentId });
    });
    if (outcome.acted) await this.domainEvents.dispatch(['conversation_changed']);
    return outcome;
  }

  private async run(
    businessId: string,
    id: string,
    body: OpsActor,
    op: (trx: Db, row: OpsConversationRow, actor: events.EventActor) => Promise<OpsConversationRow>,
  ) {
    const result = await this.db.transaction().execute(async (trx) => {
      const row = await conversationOpsRepository.findForUpdate(trx, businessId, id);
      if (!row) throw notFound('conversation');
      if (body.user_id !== undefined && !(await usersRepository.find(trx, businessId, body.user_id)))
        throw notFound('user');
      const actor: events.EventActor = body.user_id
        ? { actorType: 'human', userId: body.user_id }
        : { actorType: 'system' };
      return op(trx, row, actor);
    });
    await this.domainEvents.dispatch(['conversation_changed']);
    return result;
  }
}

/** Resolves the locked conversation `row` in the caller's transaction: `conversation_resolved`. */
export async function resolveConversation(
  trx: Db,
  businessId: string,
  row: OpsConversationRow,
  actor: events.EventActor,
  reason: string | null,
): Promise<OpsConversationRow> {
  await events.conversationResolved(trx, businessId, row, actor, { reason });
  return row;
}

/**
 * The assignment rule of ConversationOpsService.assign, on the locked conversation `row` in the
 * caller's transaction (the AI agent's transfer assigns through it too): the user, team and agent
 * named must be the business's and not removed (404 otherwise), and are held until the commit.
 */
export async function assignConversation(
  trx: Db,
  businessId: string,
  row: OpsConversationRow,
  actor: events.EventActor,
  assignee: AssigneeChange,
): Promise<OpsConversationRow> {
  const id = row.id;
  if (assignee.user_id != null && !(await usersRepository.find(trx, businessId, assignee.user_id, true)))
    throw notFound('user');
  if (assignee.team_id != null && !(await teamsRepository.find(trx, businessId, assignee.team_id, true)))
    throw notFound('team');
  if (assignee.agent_id != null && !(await agentsRepository.find(trx, businessId, assignee.agent_id)))
    throw notFound('agent');
  const changes: Updateable<ConversationsTable> = {};
  if (assignee.user_id !== undefined && assignee.user_id !== row.assigned_user_id)
    changes.assigned_user_id = assignee.user_id;
  if (assignee.team_id !== undefined && assignee.team_id !== row.team_id) changes.team_id = assignee.team_id;
  const people = Object.keys(changes).length > 0;
  if (assignee.agent_id !== undefined && assignee.agent_id !== row.agent_id) {
    changes.agent_id = assignee.agent_id;
    // Its event writes conversation_changed (assignment): the one of this operation.
    await events.agentChanged(trx, businessId, row, actor, {
      from_agent: row.agent_id,
      to_agent: assignee.agent_id,
    });
  } else if (people)
    await conversationsChanged(trx, businessId, [
      {
        conversationId: id,
        change: 'assignment',
        data: { actor_type: actor.actorType, user_id: actor.userId ?? null },
      },
    ]);
  if (Object.keys(changes).length === 0) return row;
  return conversationOpsRepository.update(trx, businessId, id, changes);
}

/**
 * An AI agent hands the conversation to people, in the caller's transaction: manual control on
 * (`manual_control_activated`, unless a person or the agent's own `bot_end` reply turned it on
 * already) and an `alert_triggered` (unless `alert` is false: a transfer a person accepted), both
 * with the agent as their actor. The caller hands the events over after its commit.
 */
export async function agentHandover(
  trx: Db,
  businessId: string,
  conversationId: string,
  agentId: string,
  reason: string,
  options: { alert?: boolean } = {},
): Promise<void> {
  const row = await conversationOpsRepository.findForUpdate(trx, businessId, conversationId);
  if (!row) return;
  const actor: events.EventActor = { actorType: 'ai_agent', agentId };
  const { active, locked, transitions } = manualControlChange(row, { active: true });
  if (transitions.includes('activated')) {
    await events.manualControlActivated(trx, businessId, row, actor, { reason });
    await conversationOpsRepository.update(trx, businessId, conversationId, {
      manual_control: active,
      manual_control_locked: locked,
    });
  }
  if (options.alert !== false) await events.alertTriggered(trx, businessId, row, actor, { reason });
}
