import { sql, type Kysely } from 'kysely';

/**
 * The provider accounts of channels, one channel each across all businesses, in a table of their own
 * (`channel_accounts`, a reference table once distributed: docs/SCALING.md): a unique index on
 * channels that does not lead with business_id could not be enforced by a database sharded by it.
 * A provider's notification names only the account; this table names the business and channel.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE channel_accounts (
    provider_kind text NOT NULL,
    provider_account text NOT NULL,
    business_id uuid NOT NULL,
    channel_id uuid NOT NULL,
    PRIMARY KEY (provider_kind, provider_account),
    FOREIGN KEY (business_id, channel_id) REFERENCES channels (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE INDEX channel_accounts_channel ON channel_accounts (business_id, channel_id)`.execute(db);
  await sql`INSERT INTO channel_accounts (provider_kind, provider_account, business_id, channel_id)
    SELECT provider_kind, provider_account, business_id, id FROM channels
    WHERE provider_kind IS NOT NULL AND provider_account IS NOT NULL`.execute(db);
  await sql`DROP INDEX channels_provider_account`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE UNIQUE INDEX channels_provider_account ON channels (provider_kind, provider_account)`.execute(db);
  await sql`DROP TABLE IF EXISTS channel_accounts`.execute(db);
}
