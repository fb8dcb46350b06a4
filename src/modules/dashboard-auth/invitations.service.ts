import type { Db } from '../../db/database.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { DomainError, notFound } from '../../lib/domain-errors.ts';
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
