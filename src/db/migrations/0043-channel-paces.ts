import { sql, type Kysely } from 'kysely';

/**
 * `channel_paces`: each channel's next free turn to call its provider, shared by every server
 * process on PostgreSQL when no Redis is set (src/modules/sending/channel-pace.store.ts). UNLOGGED:
 * a turn is worth no WAL flush on every send, and a crash only forgets turns that are over by the
 * time the server is back. No foreign key: a deleted channel's row is a few bytes that no send reads.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE UNLOGGED TABLE channel_paces (
    business_id uuid NOT NULL,
    channel_id uuid NOT NULL,
    next_at timestamptz NOT NULL,
    granted boolean NOT NULL,
    PRIMARY KEY (business_id, channel_id)
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS channel_paces`.execute(db);
}
