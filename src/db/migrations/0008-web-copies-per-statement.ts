import { sql, type Kysely } from 'kysely';
import { MARK_WEB_COPIES_PER_ROW } from './0007-web-copies.ts';

/**
 * Marks web-client copies once per INSERT statement instead of once per row. The row trigger ran a
 * PL/pgSQL call and a channel lookup for every WhatsApp message written: 0.11-0.14 ms each, the
 * largest cost of storing a batch of inbound messages or sends (measured with EXPLAIN ANALYZE on 24
 * rows: 2.6-3.4 ms of a 5 ms insert). The statement trigger reads the rows just inserted (a
 * transition table) in one join: the number's web-client channels, then the copies by the full key
 * of messages_provider_id. A business without a web-client channel finds none and stops there.
 * Same result as the row trigger: every copy whose Cloud API message is stored is marked.
 */
const up_ = [
  `DROP TRIGGER messages_mark_web_copies ON messages`,
  `DROP FUNCTION messages_mark_web_copies()`,
  // The first query only reads the rows inserted and the channels (small), so its cached plan fits
  // any size. The update runs only when the number has a web-client channel, and through EXECUTE, so
  // it is planned for the table as it is now: a plan cached while messages was nearly empty would
  // scan it (a hash join over every message) on every insert once it holds millions.
  `CREATE FUNCTION messages_mark_web_copies() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM 1
        FROM (SELECT DISTINCT business_id, channel_id FROM inserted
               WHERE channel = 'whatsapp' AND provider_message_id IS NOT NULL AND channel_id IS NOT NULL) n
        JOIN channels c ON c.business_id = n.business_id AND c.id = n.channel_id
        JOIN channels w ON w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
       LIMIT 1;
     IF NOT FOUND THEN RETURN NULL; END IF;
     EXECUTE $q$
       UPDATE messages m SET duplicate = true
         FROM inserted n
         JOIN channels c ON c.business_id = n.business_id AND c.id = n.channel_id
         JOIN channels w ON w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
        WHERE n.channel = 'whatsapp' AND n.provider_message_id IS NOT NULL
          AND m.business_id = w.business_id AND m.channel_id = w.id AND m.provider_message_id = n.provider_message_id
          AND NOT m.duplicate $q$;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER messages_mark_web_copies AFTER INSERT ON messages
   REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION messages_mark_web_copies()`,
];

const down_ = [
  `DROP TRIGGER messages_mark_web_copies ON messages`,
  `DROP FUNCTION messages_mark_web_copies()`,
  MARK_WEB_COPIES_PER_ROW,
  `CREATE TRIGGER messages_mark_web_copies AFTER INSERT ON messages FOR EACH ROW
   WHEN (NEW.channel = 'whatsapp' AND NEW.provider_message_id IS NOT NULL AND NEW.channel_id IS NOT NULL)
   EXECUTE FUNCTION messages_mark_web_copies()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of up_) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of down_) await sql.raw(statement).execute(db);
}
