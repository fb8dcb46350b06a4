import { sql, type Kysely } from 'kysely';

/**
 * A merge in two steps (docs/ARCHITECTURE.md#contact-merges): the loser is hidden at once
 * (`merged_into` names its survivor) and its messages and events move to the survivor afterwards, a
 * slice at a time. A hidden contact goes with its survivor when that is deleted (the foreign key's
 * cascade, which contacts_merged serves). contacts_merging answers "whose is this hidden contact"
 * for the readers that show a message's contact: an index of the few hidden contacts only.
 *
 * conversations_export_flags no longer fires on a conversation's contact: a merge, the only writer
 * that changes it, joins contacts of the same is_test, so the flags never change that way, and the
 * trigger made a merge rewrite every message and event of the conversations it moved.
 */
const statements = [
  `ALTER TABLE contacts ADD COLUMN merged_into uuid`,
  `ALTER TABLE contacts ADD CONSTRAINT contacts_merged_into FOREIGN KEY (business_id, merged_into)
     REFERENCES contacts (business_id, id) ON DELETE CASCADE`,
  `CREATE INDEX contacts_merged ON contacts (business_id, merged_into) WHERE merged_into IS NOT NULL`,
  `CREATE INDEX contacts_merging ON contacts (business_id, id) INCLUDE (merged_into) WHERE merged_into IS NOT NULL`,
  `DROP TRIGGER conversations_export_flags ON conversations`,
  `CREATE TRIGGER conversations_export_flags AFTER UPDATE OF is_internal, is_group ON conversations FOR EACH ROW
   WHEN (OLD.is_internal IS DISTINCT FROM NEW.is_internal OR OLD.is_group IS DISTINCT FROM NEW.is_group)
   EXECUTE FUNCTION conversations_export_flags()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP TRIGGER IF EXISTS conversations_export_flags ON conversations',
    `CREATE TRIGGER conversations_export_flags AFTER UPDATE OF is_internal, is_group, contact_id ON conversations FOR EACH ROW
     WHEN (OLD.is_internal IS DISTINCT FROM NEW.is_internal OR OLD.is_group IS DISTINCT FROM NEW.is_group OR OLD.contact_id IS DISTINCT FROM NEW.contact_id)
     EXECUTE FUNCTION conversations_export_flags()`,
    // Moves that had not ended end here, in one statement each, as merges did before.
    `UPDATE messages m SET contact_id = k.merged_into FROM contacts k
     WHERE k.business_id = m.business_id AND k.id = m.contact_id AND k.merged_into IS NOT NULL`,
    `UPDATE events e SET contact_id = k.merged_into FROM contacts k
     WHERE k.business_id = e.business_id AND k.id = e.contact_id AND k.merged_into IS NOT NULL`,
    'DELETE FROM contacts WHERE merged_into IS NOT NULL',
    `DELETE FROM outbox WHERE kind = 'contact_merge_move'`,
    'DROP INDEX IF EXISTS contacts_merging',
    'DROP INDEX IF EXISTS contacts_merged',
    'ALTER TABLE contacts DROP CONSTRAINT IF EXISTS contacts_merged_into',
    'ALTER TABLE contacts DROP COLUMN IF EXISTS merged_into',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
