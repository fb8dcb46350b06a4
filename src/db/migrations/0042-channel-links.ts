import { sql, type Kysely } from 'kysely';

/**
 * Channels linked to the provider as a device (a WhatsApp number linked like WhatsApp Web): the
 * link's state as the dashboard shows it (`channel_links`: the QR code or pairing code to link it
 * with, linked, logged out, and what the operator asked for), and the link's credentials and keys
 * (`channel_link_keys`: one sealed value per key), so another process or a restart resumes it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE channel_links (
    business_id uuid NOT NULL,
    channel_id uuid NOT NULL,
    state text NOT NULL DEFAULT 'unlinked',
    qr text,
    pairing_code text,
    pairing_phone text,
    requested boolean NOT NULL DEFAULT false,
    account text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, channel_id),
    FOREIGN KEY (business_id, channel_id) REFERENCES channels (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE TABLE channel_link_keys (
    business_id uuid NOT NULL,
    channel_id uuid NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (business_id, channel_id, key),
    FOREIGN KEY (business_id, channel_id) REFERENCES channels (business_id, id) ON DELETE CASCADE
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS channel_link_keys`.execute(db);
  await sql`DROP TABLE IF EXISTS channel_links`.execute(db);
}
