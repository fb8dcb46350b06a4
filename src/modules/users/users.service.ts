import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { UserRole } from '../../db/types.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { conflict, DomainError, forbidden, invalid, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Invitation, InvitationsService } from '../dashboard-auth/invitations.service.ts';
import type { DashboardSessionsService } from '../dashboard-auth/sessions.service.ts';
import { unassignContacts } from '../contacts/removed-assignees.ts';
import { unassignConversations } from '../conversations/removed-assignees.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import type { EventActor } from '../events/events.writer.ts';
import { teamsRepository } from '../teams/teams.repository.ts';
import { hashPassword } from './passwords.ts';
import { usersRepository } from './users.repository.ts';

export interface CreateUserInput {
  email: string;
  name: string;
  password?: string;
  role?: UserRole;
  /** Create without a password and answer an invitation link. */
  invite?: boolean;
}

const lastOwner = () =>
  new DomainError('conflict', 'last_owner', 'the business must keep an owner: make another user owner first');

/** Team members of a business (assignees, dashboard users) and their roles. */
export class UsersService {
  constructor(
    private readonly db: Db,
    private readonly invitations: InvitationsService,
    private readonly sessions: DashboardSessionsService,
    private readonly clock: Clock,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  /** A new user, agent unless told; with `invite`, the link that lets them choose their password. */
  async create(businessId: string, input: CreateUserInput) {
    if (input.invite && input.password !== undefined)
      throw invalid('an invited user chooses their own password: send invite or password, not both', [
        { path: '/password' },
      ]);
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
    try {
      return await this.db.transaction().execute(async (trx) => {
        const user = await usersRepository.insert(trx, businessId, {
          id: newId(),
          email: input.email,
          name: input.name,
          password_hash: passwordHash,
          role: input.role ?? 'agent',
        });
        const invitation: Invitation | undefined = input.invite
          ? await this.invitations.issue(trx, businessId, user.id)
          : undefined;
        return { user, ...(invitation ? { invitation } : {}) };
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict('a user with this email already exists in the business', [{ field: 'email' }]);
      throw err;
    }
  }

  /** An invitation sent from the dashboard: only an owner may invite an owner. */
  invite(businessId: string, byRole: UserRole, input: { email: string; name: string; role?: UserRole }) {
    if (input.role === 'owner' && byRole !== 'owner') throw forbidden('only an owner may invite an owner');
    return this.create(businessId, { ...input, invite: true });
  }

  list(businessId: string, limit: number) {
    return usersRepository.list(this.db, businessId, limit);
  }

  /**
   * Renames a user or changes their role; a business that has owners keeps one. `byRole` is the
   * dashboard user's who asks (none: the operator): only an owner makes an owner or changes an
   * owner's role.
   */
  async update(businessId: string, id: string, changes: { name?: string; role?: UserRole }, byRole?: UserRole) {
    if (changes.role === 'owner' && byRole !== undefined && byRole !== 'owner')
      throw forbidden('only an owner may make an owner');
    return this.db.transaction().execute(async (trx) => {
      if (changes.role !== undefined)
        await this.keepAnOwner(trx, businessId, id, { leaving: changes.role !== 'owner', byRole, action: 'change' });
      const user = await usersRepository.update(trx, businessId, id, changes);
      if (!user) throw notFound('user');
      return user;
    });
  }

  /**
   * Removes a user: they can no longer sign in, their sessions end, their invitations close, they
   * leave their teams, and the conversations and contacts assigned to them are unassigned. The row
   * stays, so the messages and events they wrote still name them. `byRole` as for update: only an
   * owner removes an owner; `byUserId` is the dashboard user who removes them (none: the operator).
   */
  async remove(businessId: string, id: string, byRole?: UserRole, byUserId?: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await this.keepAnOwner(trx, businessId, id, { leaving: true, byRole, action: 'remove' });
      const now = isoAt(this.clock.now());
      const user = await usersRepository.markDeleted(trx, businessId, id, now);
      if (!user) throw notFound('user');
      await this.sessions.endSessionsOf(trx, [{ business_id: businessId, user_id: id }]);
      await this.invitations.closeForUser(trx, businessId, id);
      await teamsRepository.removeUser(trx, businessId, id);
      // In this transaction rather than by a subscriber: a removal writes no domain event of its own,
      // and committed together no conversation is ever left with an assignee who cannot work it. A
      // transaction assigning them meanwhile holds the user's row (find's hold): the mark above
      // waited for it, so these statements see what it assigned.
      const actor: EventActor = byUserId ? { actorType: 'human', userId: byUserId } : { actorType: 'system' };
      await unassignConversations(trx, businessId, { userId: id }, actor);
      await unassignContacts(trx, businessId, user, actor);
    });
    await this.domainEvents.dispatch(['conversation_changed', 'contact_changed']);
  }

  /**
   * Refuses a change of an owner asked by someone else than an owner, and one that takes away the
   * business's last owner (`leaving`). The owners stay locked until the change commits.
   */
  private async keepAnOwner(
    db: Db,
    businessId: string,
    id: string,
    change: { leaving: boolean; byRole?: UserRole; action: 'change' | 'remove' },
  ): Promise<void> {
    const owners = await usersRepository.lockOwners(db, businessId);
    const isOwner = owners.some((o) => o.id === id);
    if (isOwner && change.byRole !== undefined && change.byRole !== 'owner')
      throw forbidden(`only an owner may ${change.action === 'change' ? "change an owner's role" : 'remove an owner'}`);
    if (change.leaving && isOwner && owners.length === 1) throw lastOwner();
  }
}
