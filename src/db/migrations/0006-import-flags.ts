import { sql, type Kysely } from 'kysely';

/**
 * Lets a writer that decides a message's export flags itself (the import, which already reads the
 * conversation and contact of each batch) skip the per-row `messages_export_flags` trigger, the
 * largest database cost of importing millions of messages after the row and its indexes.
 *
 * `messages.excluded` loses its default, so a writer that does not give it (every writer but the
 * import) inserts NULL and the trigger runs as before and sets it; NOT NULL is checked after BEFORE
 * ROW triggers, so no row is stored without the flag. A writer that gives `excluded` must also leave
 * `duplicate` right: the import never sets `provider_message_id`, and without it a message is never a
 * duplicate. The WHEN clause is evaluated without calling PL/pgSQL, so skipped rows cost nothing.
 */
const up_ = [
  `ALTER TABLE messages ALTER COLUMN excluded DROP DEFAULT`,
  `DROP TRIGGER messages_export_flags ON messages`,
  `CREATE TRIGGER messages_export_flags BEFORE INSERT ON messages FOR EACH ROW
   WHEN (NEW.excluded IS NULL) EXECUTE FUNCTION messages_export_flags()`,
];

const down_ = [
  `DROP TRIGGER messages_export_flags ON messages`,
  `CREATE TRIGGER messages_export_flags BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION messages_export_flags()`,
  `ALTER TABLE messages ALTER COLUMN excluded SET DEFAULT false`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of up_) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of down_) await sql.raw(statement).execute(db);
}
