import { sql, type Kysely } from 'kysely';

/**
 * Dashboard sign-in (docs/ARCHITECTURE.md#dashboard-sessions): users' roles, removal and last use;
 * sessions and the businesses each may act for; invitations; sign-in failures.
 *
 * Users created before roles existed were provisioned by the operator as the business's team: the
 * first of each business becomes its owner and the others admins, so every business that had users
 * keeps one owner and nobody loses a page they could reach. New users default to agent.
 *
 * A removed user keeps its row (deleted_at), so the history it wrote still names it; its email may
 * be given to a new user of the business.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE users
    ADD COLUMN role text NOT NULL DEFAULT 'agent' CHECK (role IN ('owner', 'admin', 'agent')),
    ADD COLUMN last_active_at timestamptz,
    ADD COLUMN deleted_at timestamptz`.execute(db);
  await sql`UPDATE users u SET role = CASE WHEN u.id = (
      SELECT f.id FROM users f WHERE f.business_id = u.business_id ORDER BY f.created_at, f.id LIMIT 1
    ) THEN 'owner' ELSE 'admin' END`.execute(db);
  await sql`DROP INDEX users_email`.execute(db);
  await sql`CREATE UNIQUE INDEX users_email ON users (business_id, lower(email)) WHERE deleted_at IS NULL`.execute(db);
  // Sign-in looks an email up in every business: the one read of users across businesses.
  await sql`CREATE INDEX users_sign_in ON users (lower(email)) WHERE deleted_at IS NULL`.execute(db);

  // A session is found by its token's hash before any business is known; it acts for one business
  // (business_id, user_id) among those its sign-in opened (dashboard_session_users).
  await sql`CREATE TABLE dashboard_sessions (
    id uuid PRIMARY KEY,
    token_hash text NOT NULL,
    business_id uuid NOT NULL,
    user_id uuid NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ip text,
    user_agent text,
    FOREIGN KEY (business_id, user_id) REFERENCES users (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE UNIQUE INDEX dashboard_sessions_token ON dashboard_sessions (token_hash)`.execute(db);
  await sql`CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at)`.execute(db);
  await sql`CREATE TABLE dashboard_session_users (
    session_id uuid NOT NULL REFERENCES dashboard_sessions (id) ON DELETE CASCADE,
    business_id uuid NOT NULL,
    user_id uuid NOT NULL,
    PRIMARY KEY (session_id, business_id),
    FOREIGN KEY (business_id, user_id) REFERENCES users (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE INDEX dashboard_session_users_user ON dashboard_session_users (business_id, user_id)`.execute(db);

  await sql`CREATE TABLE dashboard_invitations (
    business_id uuid NOT NULL,
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    token_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    accepted_at timestamptz,
    PRIMARY KEY (business_id, id),
    FOREIGN KEY (business_id, user_id) REFERENCES users (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE UNIQUE INDEX dashboard_invitations_token ON dashboard_invitations (token_hash)`.execute(db);
  await sql`CREATE INDEX dashboard_invitations_user ON dashboard_invitations (business_id, user_id)`.execute(db);

  // One row per throttled key (the digest of an account's email or of a client address).
  await sql`CREATE TABLE dashboard_sign_in_failures (
    key text PRIMARY KEY,
    failures integer NOT NULL,
    last_failure_at timestamptz NOT NULL
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'dashboard_sign_in_failures',
    'dashboard_invitations',
    'dashboard_session_users',
    'dashboard_sessions',
  ]) {
    await sql.raw(`DROP TABLE IF EXISTS ${table}`).execute(db);
  }
  await sql`DROP INDEX IF EXISTS users_sign_in`.execute(db);
  await sql`DROP INDEX users_email`.execute(db);
  await sql`CREATE UNIQUE INDEX users_email ON users (business_id, lower(email))`.execute(db);
  await sql`ALTER TABLE users DROP COLUMN role, DROP COLUMN last_active_at, DROP COLUMN deleted_at`.execute(db);
}
