import { sql, type Kysely } from 'kysely';

/**
 * The AI agent's tools.
 *
 * - pgvector, where the database has it (the embedded engine ships it; a PostgreSQL server has it when
 *   its package is installed and the role may create it): the agent's search_collection ranks items
 *   with its distance operator. Without it, the same ranking is computed in SQL
 *   (docs/ARCHITECTURE.md#the-ai-agents-tools), so a failed creation is no error.
 * - Runs end by the tool that ends the AI's part: `resolved` (resolve_conversation) and `transferred`
 *   (a transfer accepted); a human_handoff ends `handed_over` as a failed run does.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
      CREATE EXTENSION IF NOT EXISTS vector;
    END IF;
  EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_file THEN
    RAISE NOTICE 'pgvector not created: %', SQLERRM;
  END $$`.execute(db);
  await sql`ALTER TABLE ai_runs DROP CONSTRAINT ai_runs_status_check`.execute(db);
  await sql`ALTER TABLE ai_runs ADD CONSTRAINT ai_runs_status_check
    CHECK (status IN ('running', 'replied', 'skipped', 'superseded', 'handed_over', 'resolved', 'transferred'))`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE ai_runs DROP CONSTRAINT ai_runs_status_check`.execute(db);
  await sql`UPDATE ai_runs SET status = 'handed_over' WHERE status IN ('resolved', 'transferred')`.execute(db);
  await sql`ALTER TABLE ai_runs ADD CONSTRAINT ai_runs_status_check
    CHECK (status IN ('running', 'replied', 'skipped', 'superseded', 'handed_over'))`.execute(db);
}
