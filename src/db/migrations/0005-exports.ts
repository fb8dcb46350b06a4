import { sql, type Kysely } from 'kysely';

/**
 * What the export endpoints need so that each query is one index range scan:
 * - `messages.excluded` / `events.excluded` (rule 4: test contacts, internal chats, WhatsApp groups;
 *   for events also internal platform event types) and `messages.duplicate` (rule 5: the web-client
 *   copy of a message the Cloud API channel of the same number also recorded) are decided when a row
 *   is written, and partial indexes hold only the exported rows.
 * - `rate_limit_counters`: fixed-window counters shared by every server process when no Redis is set.
 *
 * The flags are kept by triggers rather than by each writer because messages and events are written
 * by many modules (inbound, sending, import, merge, ...) and a flag that one of them forgot would
 * silently leak a test or internal conversation into a business's warehouse; the triggers also follow
 * later changes (a contact becoming a test contact, a conversation marked internal).
 */
const EXPORTED_EVENT_TYPES = [
  'manual_control_activated',
  'manual_control_released',
  'manual_control_locked',
  'manual_control_unlocked',
  'alert_triggered',
  'transfer_accepted',
  'transfer_rejected',
  'transfer_fallback_required',
  'sentiment_analyzed',
  'conversation_archived',
  'conversation_unarchived',
  'conversation_resolved',
  'agent_assigned',
  'agent_switched',
  'agent_removed',
  'contact_field_changed',
];
const typeList = EXPORTED_EVENT_TYPES.map((t) => `'${t}'`).join(', ');

const statements = [
  `ALTER TABLE messages ADD COLUMN excluded boolean NOT NULL DEFAULT false`,
  `ALTER TABLE messages ADD COLUMN duplicate boolean NOT NULL DEFAULT false`,
  `ALTER TABLE events ADD COLUMN excluded boolean NOT NULL DEFAULT false`,
  // Manual control pinned by a person (manual_control_locked): the AI does not take over on its own.
  `ALTER TABLE conversations ADD COLUMN manual_control_locked boolean NOT NULL DEFAULT false`,

  // A conversation is left out of exports when it is internal, a group, or its contact is a test contact.
  `CREATE FUNCTION export_excluded(b uuid, conversation uuid, contact uuid) RETURNS boolean
   LANGUAGE sql STABLE AS $$
     SELECT coalesce((SELECT k.is_test FROM contacts k WHERE k.business_id = b AND k.id = contact), false)
         OR coalesce((SELECT c.is_internal OR c.is_group FROM conversations c WHERE c.business_id = b AND c.id = conversation), false)
   $$`,

  `CREATE FUNCTION messages_export_flags() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     -- One join rather than export_excluded(): this runs for every message written (imports of millions).
     SELECT k.is_test OR c.is_internal OR c.is_group INTO NEW.excluded
       FROM conversations c JOIN contacts k ON k.business_id = c.business_id AND k.id = c.contact_id
      WHERE c.business_id = NEW.business_id AND c.id = NEW.conversation_id;
     NEW.excluded := coalesce(NEW.excluded, false);
     -- A web-client copy is a duplicate when the Cloud API channel of the same number holds the
     -- same provider message (index messages_provider_id).
     IF NEW.channel = 'whatsapp_web' AND NEW.provider_message_id IS NOT NULL AND NEW.channel_id IS NOT NULL THEN
       NEW.duplicate := EXISTS (
         SELECT 1 FROM channels w
         JOIN channels c ON c.business_id = w.business_id AND c.type = 'whatsapp' AND c.identifier = w.identifier
         JOIN messages m ON m.business_id = c.business_id AND m.channel_id = c.id AND m.provider_message_id = NEW.provider_message_id
         WHERE w.business_id = NEW.business_id AND w.id = NEW.channel_id);
     END IF;
     RETURN NEW;
   END $$`,
  `CREATE TRIGGER messages_export_flags BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION messages_export_flags()`,

  // The Cloud API copy may arrive after the web copy: the web copy then stops being exported.
  `CREATE FUNCTION messages_mark_web_copies() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE messages m SET duplicate = true
       FROM channels c, channels w
      WHERE c.business_id = NEW.business_id AND c.id = NEW.channel_id
        AND w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
        AND m.business_id = w.business_id AND m.channel_id = w.id AND m.provider_message_id = NEW.provider_message_id
        AND NOT m.duplicate;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER messages_mark_web_copies AFTER INSERT ON messages FOR EACH ROW
   WHEN (NEW.channel = 'whatsapp' AND NEW.provider_message_id IS NOT NULL AND NEW.channel_id IS NOT NULL)
   EXECUTE FUNCTION messages_mark_web_copies()`,

  `CREATE FUNCTION events_export_flags() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     NEW.excluded := NEW.type NOT IN (${typeList}) OR export_excluded(NEW.business_id, NEW.conversation_id, NEW.contact_id);
     RETURN NEW;
   END $$`,
  `CREATE TRIGGER events_export_flags BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_export_flags()`,

  // Later changes of what rule 4 looks at re-decide the flags of the rows concerned.
  `CREATE FUNCTION contacts_export_flags() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE messages SET excluded = export_excluded(business_id, conversation_id, contact_id)
      WHERE business_id = NEW.business_id AND contact_id = NEW.id;
     UPDATE events SET excluded = type NOT IN (${typeList}) OR export_excluded(business_id, conversation_id, contact_id)
      WHERE business_id = NEW.business_id AND contact_id = NEW.id;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER contacts_export_flags AFTER UPDATE OF is_test ON contacts FOR EACH ROW
   WHEN (OLD.is_test IS DISTINCT FROM NEW.is_test) EXECUTE FUNCTION contacts_export_flags()`,
  `CREATE FUNCTION conversations_export_flags() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE messages SET excluded = export_excluded(business_id, conversation_id, contact_id)
      WHERE business_id = NEW.business_id AND conversation_id = NEW.id;
     UPDATE events SET excluded = type NOT IN (${typeList}) OR export_excluded(business_id, conversation_id, contact_id)
      WHERE business_id = NEW.business_id AND conversation_id = NEW.id;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER conversations_export_flags AFTER UPDATE OF is_internal, is_group, contact_id ON conversations FOR EACH ROW
   WHEN (OLD.is_internal IS DISTINCT FROM NEW.is_internal OR OLD.is_group IS DISTINCT FROM NEW.is_group OR OLD.contact_id IS DISTINCT FROM NEW.contact_id)
   EXECUTE FUNCTION conversations_export_flags()`,

  // Rows written before this migration.
  `UPDATE messages SET excluded = export_excluded(business_id, conversation_id, contact_id)`,
  `UPDATE events SET excluded = type NOT IN (${typeList}) OR export_excluded(business_id, conversation_id, contact_id)`,

  // The export walks: (business_id, created_at, id) over exported rows only.
  `CREATE INDEX messages_export ON messages (business_id, created_at, id) WHERE NOT excluded AND NOT duplicate`,
  `CREATE INDEX events_export ON events (business_id, created_at, id) WHERE NOT excluded`,
  // The first file of a message (the export form's media) without sorting all of the business's files.
  `CREATE INDEX media_message_first ON media (business_id, message_id, id)`,

  // UNLOGGED: a counter is worth no WAL flush on every export request; a crash only resets windows.
  `CREATE UNLOGGED TABLE rate_limit_counters (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    bucket text NOT NULL,
    window_start timestamptz NOT NULL,
    hits integer NOT NULL,
    PRIMARY KEY (business_id, bucket)
  )`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP TABLE IF EXISTS rate_limit_counters',
    'DROP TRIGGER IF EXISTS conversations_export_flags ON conversations',
    'DROP TRIGGER IF EXISTS contacts_export_flags ON contacts',
    'DROP TRIGGER IF EXISTS events_export_flags ON events',
    'DROP TRIGGER IF EXISTS messages_mark_web_copies ON messages',
    'DROP TRIGGER IF EXISTS messages_export_flags ON messages',
    'DROP FUNCTION IF EXISTS conversations_export_flags()',
    'DROP FUNCTION IF EXISTS contacts_export_flags()',
    'DROP FUNCTION IF EXISTS events_export_flags()',
    'DROP FUNCTION IF EXISTS messages_mark_web_copies()',
    'DROP FUNCTION IF EXISTS messages_export_flags()',
    'DROP FUNCTION IF EXISTS export_excluded(uuid, uuid, uuid)',
    'DROP INDEX IF EXISTS media_message_first',
    'DROP INDEX IF EXISTS events_export',
    'DROP INDEX IF EXISTS messages_export',
    'ALTER TABLE conversations DROP COLUMN IF EXISTS manual_control_locked',
    'ALTER TABLE events DROP COLUMN IF EXISTS excluded',
    'ALTER TABLE messages DROP COLUMN IF EXISTS duplicate',
    'ALTER TABLE messages DROP COLUMN IF EXISTS excluded',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
