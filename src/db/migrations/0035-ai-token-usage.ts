import { sql, type Kysely } from 'kysely';

/**
 * A business's tokens of each UTC day, added to as each model call is recorded, so the daily budget
 * reads one row rather than summing the day's runs (a sum that grew with every run of a busy day).
 * Filled from the runs of today, the day the budget counts.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE ai_token_usage (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    day date NOT NULL,
    tokens bigint NOT NULL,
    PRIMARY KEY (business_id, day)
  )`.execute(db);
  await sql`INSERT INTO ai_token_usage (business_id, day, tokens)
    SELECT r.business_id, (now() AT TIME ZONE 'UTC')::date,
      sum(coalesce((c->>'tokens_in')::bigint, 0) + coalesce((c->>'tokens_out')::bigint, 0))
    FROM ai_runs r CROSS JOIN LATERAL jsonb_array_elements(r.model_calls) c
    WHERE r.created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    GROUP BY r.business_id`.execute(db);
  await sql`DROP INDEX IF EXISTS ai_runs_day`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS ai_runs_day ON ai_runs (business_id, created_at)`.execute(db);
  await sql`DROP TABLE IF EXISTS ai_token_usage`.execute(db);
}
