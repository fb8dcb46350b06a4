import type { DashboardConfig } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { UserRole } from '../../db/types.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { DomainError, notFound, throttled, unauthorized } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { hashPassword, needsRehash, verifyPassword } from '../users/passwords.ts';
import { usersRepository, type SignInCandidate } from '../users/users.repository.ts';
import { SignInThrottle } from './sign-in-throttle.ts';
import { sessionsRepository, type BusinessUser } from './sessions.repository.ts';
import { isToken, newToken, tokenDigest } from './tokens.ts';

/** The most businesses one sign-in opens (one email's users across businesses). */
const MAX_BUSINESSES = 50;
/** A session's last use is written at most this often, not on every request. */
const TOUCH_EVERY_MS = 60_000;
/** The most sessions a list shows. */
const LIST_LIMIT = 100;
/** What is kept of a client's User-Agent header. */
const USER_AGENT_LENGTH = 300;

/** Who acts through a session: the contract's `request.dashboard`. */
export interface SessionPrincipal {
  sessionId: string;
  userId: string;
  businessId: string;
  role: UserRole;
}

/** Where a request comes from, kept with the session for its list. */
export interface Client {
  ip: string | null;
  userAgent: string | null;
}

/** What sign-in and `GET /session` answer. */
export interface SessionView {
  user: { id: string; email: string; name: string; role: UserRole };
  business: { id: string; name: string };
  businesses: { id: string; name: string; role: UserRole }[];
  csrf_token: string;
}

/** A new session: the cookie's token, when it ends, and its view. */
export interface SignedIn {
  token: string;
  expiresAt: number;
  session: SessionView;
}

const invalidCredentials = () => new DomainError('unauthorized', 'invalid_credentials', 'wrong email or password');
const tooManyAttempts = (waitMs: number) => {
  const seconds = Math.ceil(waitMs / 1000);
  return throttled('too_many_attempts', `too many failed sign-ins; try again in ${seconds} s`, seconds);
};

/**
 * Dashboard sessions (docs/ARCHITECTURE.md#dashboard-sessions): sign-in across the businesses an
 * email belongs to, the session's view, switching business, its list, revocation and password change.
 */
export class DashboardSessionsService {
  readonly throttle: SignInThrottle;

  constructor(
    private readonly db: Db,
    private readonly config: DashboardConfig,
    private readonly clock: Clock,
  ) {
    this.throttle = new SignInThrottle(db, config.signIn, clock);
  }

  /**
   * Tries the password on every user with this email and opens a session for those it opens, acting
   * for the most recently used. An unknown email and a wrong password answer alike, after as much
   * work. `replacing` is the token of a session the browser held: it ends.
   */
  async signIn(input: { email: string; password: string }, client: Client, replacing?: string): Promise<SignedIn> {
    const keys = SignInThrottle.keys(input.email, client.ip ?? '');
    const wait = await this.throttle.attempt(keys);
    if (wait > 0) throw tooManyAttempts(wait);
    const candidates = await usersRepository.signInCandidates(this.db, input.email, MAX_BUSINESSES);
    const opened: SignInCandidate[] = [];
    if (candidates.length === 0) await verifyPassword(null, input.password);
    for (const candidate of candidates) {
      if (await verifyPassword(candidate.password_hash, input.password)) opened.push(candidate);
    }
    if (opened.length === 0) throw invalidCredentials();
    await this.throttle.succeeded(keys);
    // Hashes of an earlier scheme (scrypt) or parameters are made again while the password is at hand.
    const stale = opened.filter((user) => needsRehash(user.password_hash!));
    const rehashed = stale.length > 0 ? await hashPassword(input.password) : undefined;
    const users = opened.map((user) => ({ business_id: user.business_id, user_id: user.id }));
    return this.db.transaction().execute(async (trx) => {
      for (const user of stale) await usersRepository.replacePasswordHash(trx, user, rehashed!);
      if (replacing !== undefined && isToken(replacing))
        await sessionsRepository.deleteByToken(trx, tokenDigest(replacing));
      return this.open(trx, users[0], users, client);
    });
  }

  /**
   * Opens a session acting for `acting`, which may switch to any of `users`; in the caller's
   * transaction. The acting user's business becomes its most recently used.
   */
  async open(db: Db, acting: BusinessUser, users: BusinessUser[], client: Client): Promise<SignedIn> {
    const now = this.clock.now();
    const token = newToken();
    const id = newId();
    const expiresAt = now + this.config.sessionMaxMs;
    await sessionsRepository.insert(
      db,
      {
        id,
        token_hash: tokenDigest(token),
        business_id: acting.business_id,
        user_id: acting.user_id,
        csrf_token: newToken(),
        created_at: isoAt(now),
        last_seen_at: isoAt(now),
        expires_at: isoAt(expiresAt),
        ip: client.ip,
        user_agent: client.userAgent?.slice(0, USER_AGENT_LENGTH) ?? null,
      },
      users,
    );
    await usersRepository.touchActive(db, acting.business_id, acting.user_id, isoAt(now));
    return { token, expiresAt, session: await this.viewOf(db, id) };
  }

  /** The live session of a cookie's token and its CSRF token, or undefined; notes its use. */
  async resolve(token: string): Promise<{ principal: SessionPrincipal; csrfToken: string } | undefined> {
    if (!isToken(token)) return undefined;
    const now = this.clock.now();
    const row = await sessionsRepository.findLive(
      this.db,
      tokenDigest(token),
      isoAt(now),
      isoAt(now - this.config.sessionIdleMs),
    );
    if (!row) return undefined;
    if (Date.parse(row.last_seen_at) + TOUCH_EVERY_MS <= now)
      await sessionsRepository.touch(this.db, row.id, isoAt(now));
    return {
      principal: { sessionId: row.id, userId: row.user_id, businessId: row.business_id, role: row.role },
      csrfToken: row.csrf_token,
    };
  }

  /**
   * Whether a session is still live: a long-lived answer (a stream) asks from time to time and ends
   * when it is not. Its use is not noted: only requests keep a session from going idle.
   */
  isLive(sessionId: string): Promise<boolean> {
    const now = this.clock.now();
    return sessionsRepository.isLive(this.db, sessionId, isoAt(now), isoAt(now - this.config.sessionIdleMs));
  }

  view(principal: SessionPrincipal): Promise<SessionView> {
    return this.viewOf(this.db, principal.sessionId);
  }

  private async viewOf(db: Db, sessionId: string): Promise<SessionView> {
    const rows = await sessionsRepository.view(db, sessionId);
    const current = rows.find((row) => row.business_id === row.current_business_id);
    if (!current) throw unauthorized('the session has ended');
    return {
      user: { id: current.user_id, email: current.email, name: current.name, role: current.role },
      business: { id: current.business_id, name: current.business_name },
      businesses: rows.map((row) => ({ id: row.business_id, name: row.business_name, role: row.role })),
      csrf_token: current.csrf_token,
    };
  }

  async signOut(principal: SessionPrincipal): Promise<void> {
    await sessionsRepository.delete(this.db, principal.sessionId);
  }

  /** Of these sessions, those still live, with the business each acts for now (live streams end with the others). */
  async liveBusinesses(sessionIds: readonly string[]): Promise<Map<string, string>> {
    if (sessionIds.length === 0) return new Map();
    const now = this.clock.now();
    const rows = await sessionsRepository.liveBusinesses(
      this.db,
      sessionIds,
      isoAt(now),
      isoAt(now - this.config.sessionIdleMs),
    );
    return new Map(rows.map((row) => [row.id, row.business_id]));
  }

  /** Acts for another business the sign-in opened; any other answers 404, as a business that does not exist. */
  async switchBusiness(principal: SessionPrincipal, businessId: string): Promise<SessionView> {
    return this.db.transaction().execute(async (trx) => {
      const switched = await sessionsRepository.switchTo(trx, principal.sessionId, businessId);
      if (!switched) throw notFound('business');
      await usersRepository.touchActive(trx, switched.business_id, switched.user_id, isoAt(this.clock.now()));
      return this.viewOf(trx, principal.sessionId);
    });
  }

  /** The live sessions that may act for the signed-in user, newest first, the current one marked. */
  async list(principal: SessionPrincipal) {
    const now = this.clock.now();
    const rows = await sessionsRepository.listForUser(
      this.db,
      { business_id: principal.businessId, user_id: principal.userId },
      isoAt(now),
      isoAt(now - this.config.sessionIdleMs),
      LIST_LIMIT,
    );
    return rows.map((row) => ({ ...row, current: row.id === principal.sessionId }));
  }

  /** Ends one of the user's sessions; another user's answers 404. */
  async revoke(principal: SessionPrincipal, id: string): Promise<void> {
    const user = { business_id: principal.businessId, user_id: principal.userId };
    if (!(await sessionsRepository.deleteForUser(this.db, user, id))) throw notFound('session');
  }

  /**
   * Checks the current password (throttled as sign-in is) and sets the new one on every user this
   * session's sign-in opened (one person's users share one password), ending their other sessions.
   */
  async changePassword(
    principal: SessionPrincipal,
    input: { current_password: string; new_password: string },
    client: Client,
  ): Promise<void> {
    const user = await usersRepository.findWithPassword(this.db, principal.businessId, principal.userId);
    if (!user) throw unauthorized('the session has ended');
    const keys = SignInThrottle.keys(user.email, client.ip ?? '');
    const wait = await this.throttle.attempt(keys);
    if (wait > 0) throw tooManyAttempts(wait);
    if (!(await verifyPassword(user.password_hash, input.current_password)))
      throw new DomainError('forbidden', 'invalid_credentials', 'the current password is wrong');
    await this.throttle.succeeded(keys);
    const passwordHash = await hashPassword(input.new_password);
    await this.db.transaction().execute(async (trx) => {
      const users = await sessionsRepository.users(trx, principal.sessionId);
      await usersRepository.setPasswordHash(
        trx,
        users.map((u) => ({ business_id: u.business_id, id: u.user_id })),
        passwordHash,
      );
      await sessionsRepository.deleteForUsers(trx, users, principal.sessionId);
    });
  }

  /** Ends every session that may act for these users (a removed user, a password set by invitation). */
  endSessionsOf(db: Db, users: BusinessUser[]): Promise<void> {
    return sessionsRepository.deleteForUsers(db, users);
  }

  /** Deletes expired sessions and failure counts no attempt reads any more. */
  async deleteExpired(): Promise<{ sessions: number; failures: number }> {
    const now = this.clock.now();
    const sessions = await sessionsRepository.deleteExpired(
      this.db,
      isoAt(now),
      isoAt(now - this.config.sessionIdleMs),
    );
    return { sessions, failures: await this.throttle.deleteStale() };
  }

  private timer: NodeJS.Timeout | undefined;

  /** Hourly deletion of what has expired. */
  startCleanup(onError: (err: unknown) => void, intervalMs = 3_600_000): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.deleteExpired().catch(onError), intervalMs);
    this.timer.unref();
  }

  stopCleanup(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
