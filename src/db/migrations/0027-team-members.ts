import { sql, type Kysely } from 'kysely';

/**
 * The members of a team (the dashboard's team settings). A member is a user of the team's business;
 * deleting the team or the user's row drops the membership. A removed user keeps its row, so the
 * service drops its memberships when it removes it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE team_members (
    business_id uuid NOT NULL,
    team_id uuid NOT NULL,
    user_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, team_id, user_id),
    FOREIGN KEY (business_id, team_id) REFERENCES teams (business_id, id) ON DELETE CASCADE,
    FOREIGN KEY (business_id, user_id) REFERENCES users (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE INDEX team_members_user ON team_members (business_id, user_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS team_members`.execute(db);
}
