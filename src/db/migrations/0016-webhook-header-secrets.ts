import { sql, type Kysely } from 'kysely';

/**
 * Custom header values of webhooks are stored sealed (src/lib/secret-box.ts), like the signing
 * secrets. Sealing needs SECRET_KEY, which migrations do not have: the service seals the values
 * stored before this migration at start (WebhooksService.sealStored). Until then they are sent as
 * they are. `headers_sealed` tells the two apart: a header value is any text the business chose, so
 * unlike a signing secret it may well begin like a sealed value (`sb1.`), and reading it by its
 * prefix would take it for one. Rows with no headers have nothing to seal. The default (false)
 * keeps rows written by a process of an earlier version during a rolling upgrade read as plain text.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks ADD COLUMN headers_sealed boolean NOT NULL DEFAULT false`.execute(db);
  await sql`UPDATE webhooks SET headers_sealed = true WHERE headers = '{}'::jsonb`.execute(db);
}

/** Values sealed since stay sealed: no key reaches a migration to open them. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks DROP COLUMN headers_sealed`.execute(db);
}
