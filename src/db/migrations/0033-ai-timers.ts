import { sql, type Kysely } from 'kysely';

const STATUSES = ['analyzed', 'failed'];

/** The run statuses the check allows now: 0031's and those other migrations added. */
async function allowedStatuses(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{ def: string }>`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE conrelid = 'ai_runs'::regclass AND conname = 'ai_runs_status_check'`.execute(db);
  return [...(rows[0]?.def ?? '').matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
}

/** Replaces the check of run statuses with one allowing `statuses`. */
async function allowStatuses(db: Kysely<unknown>, statuses: string[]): Promise<void> {
  await sql`ALTER TABLE ai_runs DROP CONSTRAINT ai_runs_status_check`.execute(db);
  await sql`ALTER TABLE ai_runs ADD CONSTRAINT ai_runs_status_check
    CHECK (status IN (${sql.join(statuses.map((s) => sql.lit(s)))}))`.execute(db);
}

/**
 * The AI agent's timers (follow-ups, inactivity, the release of manual control, sentiment) and the
 * daily token budget.
 *
 * - `ai_runs.kind`: a run answers the customer (`reply`), follows a silence up (`follow_up`) or
 *   classifies the conversation's sentiment (`sentiment`); one row per conversation, kind and the
 *   message it is for, so a job taken up again after a crash finds its record. A sentiment ends
 *   `analyzed`, or `failed` when the model never gave one of the three values.
 * - `ai_runs_day`: a business's runs of a day, whose model calls the token budget sums.
 * - `outbox_ai_timer_waiting`: at most one waiting job of each timer kind per conversation, so the
 *   messages of a busy conversation move it rather than add more.
 * - `businesses.ai_daily_token_budget`: a business's own budget (null: the service's default).
 * - The subscriber is registered here, so no message or change written during the deploy is missed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE ai_runs ADD COLUMN kind text NOT NULL DEFAULT 'reply'
    CHECK (kind IN ('reply', 'follow_up', 'sentiment'))`.execute(db);
  // Added to what the check allows, whichever migrations added statuses before.
  await allowStatuses(db, [...new Set([...(await allowedStatuses(db)), ...STATUSES])]);
  await sql`ALTER TABLE ai_runs DROP CONSTRAINT ai_runs_business_id_conversation_id_trigger_message_id_key`.execute(db);
  await sql`ALTER TABLE ai_runs ADD CONSTRAINT ai_runs_trigger
    UNIQUE (business_id, conversation_id, kind, trigger_message_id)`.execute(db);
  await sql`CREATE INDEX ai_runs_day ON ai_runs (business_id, created_at)`.execute(db);
  await sql`CREATE UNIQUE INDEX outbox_ai_timer_waiting ON outbox (business_id, kind, ref_id)
    WHERE kind IN ('ai_sentiment', 'ai_follow_up', 'ai_inactivity', 'ai_manual_control') AND state = 'pending'`.execute(
    db,
  );
  await sql`ALTER TABLE businesses ADD COLUMN ai_daily_token_budget bigint
    CHECK (ai_daily_token_budget >= 0)`.execute(db);
  await sql`INSERT INTO domain_event_subscribers (name, types)
    VALUES ('ai_timers', '{message_created,conversation_changed}')
    ON CONFLICT (name) DO NOTHING`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM domain_event_subscribers WHERE name = 'ai_timers'`.execute(db);
  await sql`ALTER TABLE businesses DROP COLUMN IF EXISTS ai_daily_token_budget`.execute(db);
  await sql`DELETE FROM outbox WHERE kind IN ('ai_sentiment', 'ai_follow_up', 'ai_inactivity', 'ai_manual_control')`.execute(
    db,
  );
  await sql`DROP INDEX IF EXISTS outbox_ai_timer_waiting`.execute(db);
  await sql`DROP INDEX IF EXISTS ai_runs_day`.execute(db);
  await sql`DELETE FROM ai_runs WHERE kind <> 'reply'`.execute(db);
  await sql`ALTER TABLE ai_runs DROP CONSTRAINT IF EXISTS ai_runs_trigger`.execute(db);
  await sql`ALTER TABLE ai_runs ADD CONSTRAINT ai_runs_business_id_conversation_id_trigger_message_id_key
    UNIQUE (business_id, conversation_id, trigger_message_id)`.execute(db);
  await allowStatuses(
    db,
    (await allowedStatuses(db)).filter((s) => !STATUSES.includes(s)),
  );
  await sql`ALTER TABLE ai_runs DROP COLUMN kind`.execute(db);
}
