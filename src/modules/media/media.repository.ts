import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { MediaTable } from '../../db/types.ts';

export type MediaRow = Selectable<MediaTable>;

/** An attachment of an inbound message, by the provider's media id; with its file when stored already. */
export type NewMedia = Pick<
  Insertable<MediaTable>,
  'message_id' | 'provider_media_id' | 'content_type' | 'filename' | 'sha256' | 'storage_key' | 'size_bytes'
>;

/** A downloaded file's place in the file store, for its media row. */
export interface MediaFile {
  id: number;
  storage_key: string;
  size_bytes: number;
  content_type: string;
  sha256: string;
}

export const mediaRepository = {
  /**
   * Attachments of messages, in one statement; the bytes of those without a storage key are fetched
   * later (outbox kind `media_fetch`).
   */
  async insertMany(db: Db, businessId: string, rows: NewMedia[]): Promise<void> {
    if (rows.length === 0) return;
    const columns = {
      message_id: 'uuid',
      provider_media_id: 'text',
      content_type: 'text',
      filename: 'text',
      sha256: 'text',
      storage_key: 'text',
      size_bytes: 'bigint',
    } as const;
    await sql`
      insert into media (business_id, message_id, provider_media_id, content_type, filename, sha256, storage_key, size_bytes)
      select ${businessId}::uuid, v.message_id, v.provider_media_id, v.content_type, v.filename, v.sha256, v.storage_key, v.size_bytes
      from ${jsonRows('v', columns, rows)}`.execute(db);
  },

  /**
   * An attachment that came after its message (a call's recording), unless the message has one with
   * the same provider media id already. Whether it was added.
   */
  async attachLater(db: Db, businessId: string, row: NewMedia): Promise<boolean> {
    const { rows } = await sql`
      insert into media (business_id, message_id, provider_media_id, content_type, filename, sha256)
      select ${businessId}::uuid, ${row.message_id}::uuid, ${row.provider_media_id}::text, ${row.content_type ?? null}::text,
        ${row.filename ?? null}::text, ${row.sha256 ?? null}::text
      where not exists (select 1 from media m where m.business_id = ${businessId} and m.message_id = ${row.message_id}
        and m.provider_media_id = ${row.provider_media_id})
      returning id`.execute(db);
    return rows.length > 0;
  },

  find(db: Db, businessId: string, id: number): Promise<MediaRow | undefined> {
    return db
      .selectFrom('media')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** Files of a message still to download from the provider. */
  unfetched(db: Db, businessId: string, messageId: string): Promise<MediaRow[]> {
    return db
      .selectFrom('media')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('message_id', '=', messageId)
      .where('storage_key', 'is', null)
      .where('provider_media_id', 'is not', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  },

  /**
   * Files of several messages, for message lists and webhook payloads, in the order they were attached
   * (ids are random: migration 0013).
   */
  forMessages(db: Db, businessId: string, messageIds: readonly string[]): Promise<MediaRow[]> {
    if (messageIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('media')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('message_id', 'in', messageIds)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  },

  /** Points media rows at their stored files. */
  async recordFiles(db: Db, businessId: string, files: readonly MediaFile[]): Promise<void> {
    for (const { id, ...file } of files)
      await db.updateTable('media').set(file).where('business_id', '=', businessId).where('id', '=', id).execute();
  },

  /** Whether a message's download job (kind `media_fetch`) is still to run or running: its files may come yet. */
  async fetchOpen(db: Db, businessId: string, messageId: string, kind: string): Promise<boolean> {
    const row = await db
      .selectFrom('outbox')
      .select('id')
      .where('business_id', '=', businessId)
      .where('kind', '=', kind)
      .where('ref_id', '=', messageId)
      .where('state', 'in', ['pending', 'running'])
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * A media id drawn ahead of its row, as the column's default draws them (at random, migration
   * 0013), so an address naming it can be stored with its message first.
   */
  async reserveId(db: Db): Promise<number> {
    const { rows } = await sql<{ id: string }>`select (1 + floor(random() * 9007199254740990))::bigint as id`.execute(
      db,
    );
    return Number(rows[0].id);
  },

  /** A file in the store attached to a message under a reserved id (reserveId). */
  async insertStored(db: Db, businessId: string, row: MediaFile & { message_id: string; filename: string | null }) {
    await db
      .insertInto('media')
      .values({ business_id: businessId, ...row })
      .execute();
  },

  /** The channel a message travelled on. */
  async channelOfMessage(db: Db, businessId: string, messageId: string): Promise<string | null | undefined> {
    const row = await db
      .selectFrom('messages')
      .select('channel_id')
      .where('business_id', '=', businessId)
      .where('id', '=', messageId)
      .executeTakeFirst();
    return row && (row.channel_id ?? null);
  },
  /** How many attachments the contacts' messages have (what deleting one removes with those merged into it). */
  async countOfContact(db: Db, businessId: string, contactIds: string[]): Promise<number> {
    const row = await db
      .selectFrom('media')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('business_id', '=', businessId)
      .where('message_id', 'in', (eb) =>
        eb
          .selectFrom('messages')
          .select('messages.id')
          .where('messages.business_id', '=', businessId)
          .where('messages.contact_id', 'in', contactIds),
      )
      .executeTakeFirstOrThrow();
    return Number(row.n);
  },
};
