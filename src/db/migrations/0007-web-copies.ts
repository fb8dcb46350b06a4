import { sql, type Kysely } from 'kysely';

/**
 * Marking the web-client copy of a WhatsApp message: the first form joined every message of the
 * business before filtering; this one finds the number's web-client channels first, then updates
 * by the full key of messages_provider_id (business, channel, provider id). Same result.
 */

/** The row trigger's function as this migration leaves it (0008 restores it when rolled back). */
export const MARK_WEB_COPIES_PER_ROW = `CREATE OR REPLACE FUNCTION messages_mark_web_copies() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE web uuid;
    BEGIN
      FOR web IN SELECT w.id FROM channels c
                 JOIN channels w ON w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
                 WHERE c.business_id = NEW.business_id AND c.id = NEW.channel_id LOOP
        UPDATE messages SET duplicate = true
         WHERE business_id = NEW.business_id AND channel_id = web AND provider_message_id = NEW.provider_message_id AND NOT duplicate;
      END LOOP;
      RETURN NULL;
    END $$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(MARK_WEB_COPIES_PER_ROW).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `CREATE OR REPLACE FUNCTION messages_mark_web_copies() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE messages m SET duplicate = true
        FROM channels c, channels w
       WHERE c.business_id = NEW.business_id AND c.id = NEW.channel_id
         AND w.business_id = c.business_id AND w.type = 'whatsapp_web' AND w.identifier = c.identifier
         AND m.business_id = w.business_id AND m.channel_id = w.id AND m.provider_message_id = NEW.provider_message_id
         AND NOT m.duplicate;
      RETURN NULL;
    END $$`,
    )
    .execute(db);
}
