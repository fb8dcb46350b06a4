import { sql, type Kysely } from 'kysely';

/** What the send worker needs on a message, and the agents a conversation can be assigned to. */
const statements = [
  // The provider-neutral content to send (text, media by URL, rendered template), kept with the
  // message so the worker never re-derives it from records that may change after the accept.
  `ALTER TABLE messages ADD COLUMN outbound_content jsonb`,
  // Set (committed) just before a provider call and cleared when its outcome is recorded: a job
  // abandoned while it is set may have reached the provider, so it is never sent again.
  `ALTER TABLE messages ADD COLUMN provider_call_at timestamptz`,
  `ALTER TABLE messages ADD COLUMN send_attempts integer NOT NULL DEFAULT 0`,
  `CREATE TABLE agents (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    name text NOT NULL,
    type text NOT NULL DEFAULT 'basic',
    config jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id)
  )`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP TABLE IF EXISTS agents',
    'ALTER TABLE messages DROP COLUMN IF EXISTS send_attempts',
    'ALTER TABLE messages DROP COLUMN IF EXISTS provider_call_at',
    'ALTER TABLE messages DROP COLUMN IF EXISTS outbound_content',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
