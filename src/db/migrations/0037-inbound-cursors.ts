import { sql, type Kysely } from 'kysely';

/**
 * Where the reading of each polled channel (an IMAP mailbox) stands: the adapter's cursor (UIDVALIDITY
 * and the last UID stored), written in the transaction that stores what was read, and the lease of
 * the one server process reading it (`holder` until `held_until`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE inbound_cursors (
    business_id uuid NOT NULL,
    channel_id uuid NOT NULL,
    cursor jsonb,
    holder text,
    held_until timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, channel_id),
    FOREIGN KEY (business_id, channel_id) REFERENCES channels (business_id, id) ON DELETE CASCADE
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS inbound_cursors`.execute(db);
}
