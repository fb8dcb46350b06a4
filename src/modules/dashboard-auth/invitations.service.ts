import type { Db } from '../../db/database.ts';
import type { UserRole } from '../../db/types.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { DomainError, forbidden, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import { hashPassword } from '../users/passwords.ts';
import { usersRepository } from '../users/users.repository.ts';
import { newInvitationToken, readInvitationToken } from './invitation-tokens.ts';
import { invitationsRepository } from './invitations.repository.ts';
import type { Client, DashboardSessionsService, SignedIn } from './sessions.service.ts';
import { tokenDigest } from './tokens.ts';

/** An invitation as the operator sees it once: the link to hand the person, and when it stops working. */
export interface Invitation {
  url: string;
  expires_at: string;
}

/** The latest invitation of a user who has not joined yet: `open` while its link still works. */
export interface PendingInvitation {
  id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  open: boolean;
}

const joined = () =>
  new DomainError('conflict', 'invitation_used', 'the user has already joined: they sign in with their password');
const expired = () => new DomainError('gone', 'invitation_expired', 'the invitation has expired; ask for a new one');
const used = () => new DomainError('gone', 'invitation_used', 'the invitation was already accepted; sign in instead');

/**
 * Invitations to the dashboard: a signed, expiring link for a user created without a password; its
 * acceptance sets the password and signs in, once.
 */
export class InvitationsService {
  constructor(
    private readonly db: Db,
    private readonly options: { secretKeys: SecretKeys; publicUrl: string; invitationMs: number },
    private readonly clock: Clock,
    private readonly sessions: DashboardSessionsService,
  ) {}

  /** A new invitation for the user, in the caller's transaction; earlier open ones end. */
  async issue(db: Db, businessId: string, userId: string): Promise<Invitation> {
    const now = this.clock.now();
    const expiresAt = now + this.options.invitationMs;
    const token = newInvitationToken(this.options.secretKeys, expiresAt);
    await invitationsRepository.closeForUser(db, businessId, userId, isoAt(now));
    await invitationsRepository.insert(db, {
      business_id: businessId,
      id: newId(),
      user_id: userId,
      token_hash: tokenDigest(token),
      created_at: isoAt(now),
      expires_at: isoAt(expiresAt),
    });
    return {
      url: `${this.options.publicUrl}/dashboard/invitations/${token}`,
      expires_at: isoAt(expiresAt).replace(/Z$/, '000Z'),
    };
  }

  /** The latest invitation of each user who has not joined yet (at most `limit`). */
  pending(businessId: string, limit: number): Promise<PendingInvitation[]> {
    return invitationsRepository.pending(this.db, businessId, isoAt(this.clock.now()), limit);
  }

  /**
   * Sends a user's invitation again: a new link, and the earlier ones stop working. `byRole` is the
   * dashboard user's who asks: only an owner invites an owner, so only an owner sends an owner's again.
   */
  async resend(businessId: string, id: string, byRole: UserRole): Promise<Invitation> {
    return this.db.transaction().execute(async (trx) => {
      const userId = await this.notJoined(trx, businessId, id, byRole, 'send');
      return this.issue(trx, businessId, userId);
    });
  }

  /** Withdraws a user's invitation: its link stops working; the user stays, and may be sent a new one. */
  async withdraw(businessId: string, id: string, byRole: UserRole): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const userId = await this.notJoined(trx, businessId, id, byRole, 'withdraw');
      await invitationsRepository.closeForUser(trx, businessId, userId, isoAt(this.clock.now()));
    });
  }

  /**
   * The user of the invitation, who must not have joined yet, with their unaccepted invitations locked
   * until the caller commits: an acceptance of any of them cannot slip in between (404 for another
   * business's invitation or a removed user, 409 `invitation_used` once joined).
   */
  private async notJoined(
    trx: Db,
    businessId: string,
    id: string,
    byRole: UserRole,
    action: 'send' | 'withdraw',
  ): Promise<string> {
    const invitation = await invitationsRepository.find(trx, businessId, id);
    if (!invitation) throw notFound('invitation');
    await invitationsRepository.lockUnaccepted(trx, businessId, invitation.user_id);
    const user = await usersRepository.findWithPassword(trx, businessId, invitation.user_id);
    if (!user) throw notFound('invitation');
    if (user.role === 'owner' && byRole !== 'owner')
      throw forbidden(`only an owner may ${action} an owner's invitation`);
    if (user.password_hash !== null) throw joined();
    return user.id;
  }

  /** Ends the user's open invitations (the user was removed), in the caller's transaction. */
  async closeForUser(db: Db, businessId: string, userId: string): Promise<void> {
    await invitationsRepository.closeForUser(db, businessId, userId, isoAt(this.clock.now()));
  }

  /**
   * Sets the invited user's password (and name, when given) and signs in for that business. A token
   * made up or unknown answers 404; expired or already used, 410.
   */
  async accept(input: { token: string; password: string; name?: string }, client: Client): Promise<SignedIn> {
    const now = this.clock.now();
    const state = readInvitationToken(this.options.secretKeys, input.token, now);
    if (state === 'invalid') throw notFound('invitation');
    if (state === 'expired') throw expired();
    const passwordHash = await hashPassword(input.password);
    const tokenHash = tokenDigest(input.token);
    return this.db.transaction().execute(async (trx) => {
      const claimed = await invitationsRepository.claim(trx, tokenHash, isoAt(now));
      if (!claimed) {
        const invitation = await invitationsRepository.findByToken(trx, tokenHash);
        if (!invitation) throw notFound('invitation');
        throw invitation.accepted_at ? used() : expired();
      }
      const user = { business_id: claimed.business_id, id: claimed.user_id };
      if (!(await usersRepository.find(trx, user.business_id, user.id))) throw notFound('invitation');
      await usersRepository.setPasswordHash(trx, [user], passwordHash);
      if (input.name !== undefined) await usersRepository.update(trx, user.business_id, user.id, { name: input.name });
      const acting = { business_id: user.business_id, user_id: user.id };
      await this.sessions.endSessionsOf(trx, [acting]);
      return this.sessions.open(trx, acting, [acting], client);
    });
  }
}
