import { sql, type Kysely } from 'kysely';

/**
 * whatsapp_message_key (0048) never throws, whatever the provider id. A wamid whose bytes read as a
 * binary whose length passes the int range (a varint's fifth byte) made it read at a negative
 * offset, take a negative length or add past the range, and that error failed the insert or update
 * of the message: the function feeds the index messages_whatsapp_key and the triggers of web copies.
 * Such a length now answers null, as any other id that holds no key does. Every id the function
 * answered before gets the same answer, so the index needs no rebuild.
 */
const MESSAGE_KEY = `CREATE OR REPLACE FUNCTION whatsapp_message_key(provider_id text) RETURNS text
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

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(MESSAGE_KEY).execute(db);
}

/** The function before answered the same wherever it answered at all: there is nothing to undo. */
export async function down(): Promise<void> {}
