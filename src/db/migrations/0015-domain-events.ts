import { sql, type Kysely } from 'kysely';

/**
 * Domain events (src/modules/domain-events): written in the transaction that causes them and handed
 * to subscribers after the commit. Each subscriber's position is the set of its pending rows, written
 * with the event and deleted in the transaction that hands the event over, so no event is skipped
 * whatever order concurrent transactions commit in (see domain-events.repository.ts).
 * The webhook deliveries' subscriber is registered here, so no event is written before it exists.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE domain_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    business_id uuid NOT NULL,
    type text NOT NULL,
    conversation_id uuid,
    subject_id uuid NOT NULL,
    data jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
  )`.execute(db);
  await sql`CREATE TABLE domain_event_subscribers (
    name text PRIMARY KEY,
    types text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`.execute(db);
  await sql`CREATE TABLE domain_event_pending (
    subscriber text NOT NULL,
    event_id bigint NOT NULL,
    PRIMARY KEY (subscriber, event_id)
  )`.execute(db);
  await sql`INSERT INTO domain_event_subscribers (name, types) VALUES ('webhooks', '{message_created}')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE domain_event_pending`.execute(db);
  await sql`DROP TABLE domain_event_subscribers`.execute(db);
  await sql`DROP TABLE domain_events`.execute(db);
}
