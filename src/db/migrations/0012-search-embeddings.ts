import { sql, type Kysely } from 'kysely';

/**
 * The embedding of a search item, computed from its embedding_json by the configured provider
 * (outbox kind `search_embed`), with the model that computed it. Null until computed, and again
 * whenever the item's embedding input changes. `embedding_queued_at`: when its last job was queued
 * (a write of an item still without an embedding queues another after a while).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE search_items ADD COLUMN embedding real[], ADD COLUMN embedding_model text, ADD COLUMN embedded_at timestamptz,
    ADD COLUMN embedding_queued_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE search_items DROP COLUMN embedding, DROP COLUMN embedding_model, DROP COLUMN embedded_at,
    DROP COLUMN embedding_queued_at`.execute(db);
}
