import { sql, type Kysely } from 'kysely';

/**
 * Export rule 5 for a number connected both through the Cloud API and linked as a device: the web
 * client records a message under its key id (`3A6D4B7F95DAE378BA7B`), the Cloud API under a wamid,
 * which is that same key (the chat, fromMe, the key id) in Thrift's compact encoding, base64'd:
 * `wamid.HBgMMzkz...EhgUM0E2RDRC...IA`. The copies are matched by the key id read from the wamid
 * (`whatsapp_message_key`), and still by equal ids (history imported with the wamid on both).
 *
 * The Cloud API copy of a send gets its wamid from the send's answer, by an update, so the copies
 * are matched then too (messages_mark_web_copies_sent); before, only inserts were.
 */

// PL/pgSQL rather than the application: the triggers that keep `duplicate` right are the one write
// path of the rule, and they need the key where they run. Reads the outer struct's fields, skipping
// nested structs, and answers field 3 (a binary); null for anything that is not such a wamid. It never
// throws, whatever the id: it feeds an index and triggers, so an error would fail the message's write.
const MESSAGE_KEY = `CREATE FUNCTION whatsapp_message_key(provider_id text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
  DECLARE
    b bytea; encoded text; pos int := 0; depth int := 0; head int; kind int; field int; len int; shift int; byte int;
    last int[] := ARRAY[0, 0, 0, 0];
  BEGIN
    -- Checked rather than caught: an exception block would start a subtransaction on every call.
    IF left(provider_id, 6) <> 'wamid.' OR length(provider_id) > 400 THEN RETURN NULL; END IF;
    encoded := translate(substr(provider_id, 7), '-_', '+/');
    encoded := rtrim(encoded, '=');
    IF encoded !~ '^[A-Za-z0-9+/]+$' OR length(encoded) % 4 = 1 THEN RETURN NULL; END IF;
    b := decode(encoded || repeat('=', (4 - length(encoded) % 4) % 4), 'base64');
    LOOP
      IF pos >= length(b) THEN RETURN NULL; END IF;
      head := get_byte(b, pos); pos := pos + 1;
      IF head = 0 THEN
        IF depth = 0 THEN RETURN NULL; END IF;
        depth := depth - 1;
        CONTINUE;
      END IF;
      kind := head & 15;
      IF head >> 4 = 0 THEN RETURN NULL; END IF;
      field := last[depth + 1] + (head >> 4);
      last[depth + 1] := field;
      IF kind IN (1, 2) THEN CONTINUE;            -- a boolean, its value in the type
      ELSIF kind = 3 THEN pos := pos + 1;         -- a byte
      ELSIF kind IN (4, 5, 6, 8) THEN             -- a varint: an integer, or a binary's length
        len := 0; shift := 0;
        LOOP
          IF pos >= length(b) OR shift > 28 THEN RETURN NULL; END IF;
          byte := get_byte(b, pos); pos := pos + 1;
          len := len | ((byte & 127) << shift); shift := shift + 7;
          EXIT WHEN byte < 128;
        END LOOP;
        IF kind = 8 THEN
          -- A fifth byte shifted by 28 may set the sign bit: such a length is no binary of this id.
          -- Compared without adding, which could pass the int range.
          IF len < 0 OR len > length(b) - pos THEN RETURN NULL; END IF;
          IF depth = 0 AND field = 3 THEN
            RETURN encode(substr(b, pos + 1, len), 'escape');  -- never throws; key ids are ASCII
          END IF;
          pos := pos + len;
        END IF;
      ELSIF kind = 12 AND depth < 3 THEN
        depth := depth + 1; last[depth + 1] := 0;
      ELSE RETURN NULL;
      END IF;
    END LOOP;
  END $$`;

/**
 * The web copy's lookup of its Cloud API message: by equal id (index messages_provider_id), or by
 * the key read from the wamid (messages_whatsapp_key). The number's Cloud API channel is found
 * first, so each probe is an equality on an index's columns.
 */
const EXPORT_FLAGS = (
  matchKey: boolean,
) => `CREATE OR REPLACE FUNCTION messages_export_flags() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE cloud uuid;
   BEGIN
     SELECT k.is_test OR c.is_internal OR c.is_group INTO NEW.excluded
       FROM conversations c JOIN contacts k ON k.business_id = c.business_id AND k.id = c.contact_id
      WHERE c.business_id = NEW.business_id AND c.id = NEW.conversation_id;
     NEW.excluded := coalesce(NEW.excluded, false);
     IF NEW.channel = 'whatsapp_web' AND NEW.provider_message_id IS NOT NULL AND NEW.channel_id IS NOT NULL THEN
       FOR cloud IN SELECT c.id FROM channels w
                    JOIN channels c ON c.business_id = w.business_id AND c.type = 'whatsapp' AND c.identifier = w.identifier
                    WHERE w.business_id = NEW.business_id AND w.id = NEW.channel_id LOOP
         NEW.duplicate := NEW.duplicate OR EXISTS (
           SELECT 1 FROM messages m
            WHERE m.business_id = NEW.business_id AND m.channel_id = cloud AND m.provider_message_id = NEW.provider_message_id)${
              matchKey
                ? `
           OR EXISTS (
           SELECT 1 FROM messages m
            WHERE m.business_id = NEW.business_id AND m.channel_id = cloud AND m.channel = 'whatsapp'
              AND m.provider_message_id IS NOT NULL AND whatsapp_message_key(m.provider_message_id) = NEW.provider_message_id)`
                : ''
            };
       END LOOP;
     END IF;
     RETURN NEW;
   END $$`;

/**
 * Marks the web copies of the Cloud API messages in `inserted` (the statement's new rows). One
 * update per id a copy may have, each an equality on messages_provider_id's columns: as one join,
 * the planner walked every message of the web channel for each row inserted (minutes for a batch
 * of 1 000 at 20 000 web messages). A number without a web-client channel finds no pair.
 */
const MARK_COPIES = (
  matchKey: boolean,
) => `CREATE OR REPLACE FUNCTION messages_mark_web_copies() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE copy record;
   BEGIN
     FOR copy IN
       SELECT DISTINCT w.business_id, w.id AS channel_id, k.id AS provider_message_id
         FROM inserted n
         JOIN channels c ON c.business_id = n.business_id AND c.id = n.channel_id
         JOIN channels w ON w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
        CROSS JOIN LATERAL (VALUES (n.provider_message_id)${
          matchKey ? `, (whatsapp_message_key(n.provider_message_id))` : ''
        }) AS k(id)
        WHERE n.channel = 'whatsapp' AND n.provider_message_id IS NOT NULL AND n.channel_id IS NOT NULL AND k.id IS NOT NULL
     LOOP
       UPDATE messages SET duplicate = true
        WHERE business_id = copy.business_id AND channel_id = copy.channel_id
          AND provider_message_id = copy.provider_message_id AND NOT duplicate;
     END LOOP;
     RETURN NULL;
   END $$`;

const up_ = [
  MESSAGE_KEY,
  // The web copy's lookup by key: the Cloud API messages of a channel by the key in their wamid.
  `CREATE INDEX messages_whatsapp_key ON messages (business_id, channel_id, whatsapp_message_key(provider_message_id))
   WHERE channel = 'whatsapp' AND provider_message_id IS NOT NULL`,
  EXPORT_FLAGS(true),
  MARK_COPIES(true),
  // A send's wamid is set by an update. A statement trigger on every update of messages (receipts
  // move statuses all day) would run the function's first query for each; this one runs only for
  // the statements that may have set one, checked by the row's WHEN without calling PL/pgSQL.
  `CREATE FUNCTION messages_mark_web_copy_sent() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE web uuid;
   BEGIN
     FOR web IN SELECT w.id FROM channels c
                JOIN channels w ON w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
                WHERE c.business_id = NEW.business_id AND c.id = NEW.channel_id LOOP
       UPDATE messages SET duplicate = true
        WHERE business_id = NEW.business_id AND channel_id = web
          AND provider_message_id IN (NEW.provider_message_id, whatsapp_message_key(NEW.provider_message_id))
          AND NOT duplicate;
     END LOOP;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER messages_mark_web_copy_sent AFTER UPDATE OF provider_message_id ON messages FOR EACH ROW
   WHEN (NEW.channel = 'whatsapp' AND NEW.provider_message_id IS NOT NULL AND NEW.channel_id IS NOT NULL
     AND OLD.provider_message_id IS DISTINCT FROM NEW.provider_message_id)
   EXECUTE FUNCTION messages_mark_web_copy_sent()`,
];

const down_ = [
  `DROP TRIGGER messages_mark_web_copy_sent ON messages`,
  `DROP FUNCTION messages_mark_web_copy_sent()`,
  MARK_COPIES(false),
  EXPORT_FLAGS(false),
  `DROP INDEX messages_whatsapp_key`,
  `DROP FUNCTION whatsapp_message_key(text)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of up_) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of down_) await sql.raw(statement).execute(db);
}
