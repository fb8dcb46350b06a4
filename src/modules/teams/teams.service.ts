import type { Db } from '../../db/database.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { unassignConversations } from '../conversations/removed-assignees.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { usersRepository } from '../users/users.repository.ts';
import { teamsRepository } from './teams.repository.ts';

/** The most members a team holds. */
export const TEAM_MEMBERS_MAX = 500;

/** Teams of a business; conversations can be assigned to one, and its members are users of the business. */
export class TeamsService {
  constructor(
    private readonly db: Db,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  create(businessId: string, name: string) {
    return teamsRepository.insert(this.db, businessId, { id: newId(), name });
  }

  list(businessId: string, limit: number) {
    return teamsRepository.list(this.db, businessId, limit);
  }

  /** The teams with their members' user ids. */
  async listWithMembers(businessId: string, limit: number) {
    const teams = await teamsRepository.list(this.db, businessId, limit);
    const members = await teamsRepository.members(
      this.db,
      businessId,
      teams.map((t) => t.id),
    );
    return teams.map((team) => ({
      ...team,
      member_ids: members.filter((m) => m.team_id === team.id).map((m) => m.user_id),
    }));
  }

  async rename(businessId: string, id: string, name: string) {
    const team = await teamsRepository.rename(this.db, businessId, id, name);
    if (!team) throw notFound('team');
    return team;
  }

  /**
   * Deletes the team and its memberships, and takes it off its conversations (their users stay).
   * `byUserId` is the dashboard user who deletes it.
   */
  async delete(businessId: string, id: string, byUserId?: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      if (!(await teamsRepository.delete(trx, businessId, id))) throw notFound('team');
      // In this transaction rather than by a subscriber: a deletion writes no domain event of its own.
      // A transaction assigning the team meanwhile holds its row (find's hold), which the delete
      // waited for, so this statement sees what it assigned.
      await unassignConversations(
        trx,
        businessId,
        { teamId: id },
        byUserId ? { actorType: 'human', userId: byUserId } : { actorType: 'system' },
      );
    });
    await this.domainEvents.dispatch(['conversation_changed']);
  }

  /** Makes the team's members exactly these users of the business; an id that is not one answers 400. */
  async setMembers(businessId: string, id: string, userIds: string[]) {
    const unique = [...new Set(userIds)];
    return this.db.transaction().execute(async (trx) => {
      const team = await teamsRepository.lock(trx, businessId, id);
      if (!team) throw notFound('team');
      const known = await usersRepository.activeIds(trx, businessId, unique);
      const index = userIds.findIndex((userId) => !known.has(userId));
      if (index >= 0)
        throw invalid(`user ${userIds[index]} is not a user of the business`, [{ path: `/user_ids/${index}` }]);
      await teamsRepository.setMembers(trx, businessId, id, unique);
      const members = await teamsRepository.members(trx, businessId, [id]);
      return { id: team.id, name: team.name, member_ids: members.map((m) => m.user_id) };
    });
  }
}
