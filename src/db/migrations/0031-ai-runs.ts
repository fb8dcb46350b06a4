import { sql, type Kysely } from 'kysely';

/**
 * The AI agent answers: a channel's default agent, the record of each run, and one waiting run job
 * per conversation.
 *
 * - `channels.agent_id`: the agent every new conversation of the channel gets; a deleted agent leaves
 *   the channel without one.
 * - `outbox_ai_run_waiting`: at most one waiting `ai_run` job per conversation (its ref_id), so a
 *   message that arrives while one waits pushes it later instead of adding another.
 * - `ai_runs`: one row per run, unique per conversation and the newest inbound message it answers,
 *   so a run taken up again after a crash finds its row; `reply_message_id` is set in the transaction
 *   that accepts the reply, which is what keeps a reply from being sent twice.
 * - The subscriber is registered here, so no inbound message written during the deploy is missed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE channels ADD COLUMN agent_id uuid`.execute(db);
  await sql`ALTER TABLE channels ADD CONSTRAINT channels_agent FOREIGN KEY (business_id, agent_id)
    REFERENCES agents (business_id, id) ON DELETE SET NULL (agent_id)`.execute(db);
  await sql`CREATE UNIQUE INDEX outbox_ai_run_waiting ON outbox (business_id, ref_id)
    WHERE kind = 'ai_run' AND state = 'pending'`.execute(db);
  await sql`CREATE TABLE ai_runs (
    business_id uuid NOT NULL,
    id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    agent_id uuid NOT NULL,
    trigger_message_id uuid NOT NULL,
    input_message_ids uuid[] NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'running'
      CHECK (status IN ('running', 'replied', 'skipped', 'superseded', 'handed_over')),
    outcome text,
    model_calls jsonb NOT NULL DEFAULT '[]',
    tool_calls jsonb NOT NULL DEFAULT '[]',
    reply_text text,
    reply_message_id uuid,
    bot_status text,
    attempts integer NOT NULL DEFAULT 1,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (business_id, id),
    UNIQUE (business_id, conversation_id, trigger_message_id),
    FOREIGN KEY (business_id, conversation_id) REFERENCES conversations (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  // A conversation's runs, newest first by id (UUIDv7: in the order they started).
  await sql`CREATE INDEX ai_runs_conversation ON ai_runs (business_id, conversation_id, id)`.execute(db);
  await sql`CREATE UNIQUE INDEX ai_runs_reply ON ai_runs (business_id, reply_message_id)
    WHERE reply_message_id IS NOT NULL`.execute(db);
  await sql`INSERT INTO domain_event_subscribers (name, types) VALUES ('ai_agent', '{message_created}')
    ON CONFLICT (name) DO NOTHING`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM domain_event_subscribers WHERE name = 'ai_agent'`.execute(db);
  await sql`DROP TABLE IF EXISTS ai_runs`.execute(db);
  await sql`DROP INDEX IF EXISTS outbox_ai_run_waiting`.execute(db);
  await sql`ALTER TABLE channels DROP CONSTRAINT IF EXISTS channels_agent`.execute(db);
  await sql`ALTER TABLE channels DROP COLUMN IF EXISTS agent_id`.execute(db);
}
