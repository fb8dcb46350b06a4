import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { MediaTable } from '../../db/types.ts';

export type MediaRow = Selectable<MediaTable>;

/** A downloaded file's place in the file store, for its media row. */
export interface MediaFile {
  id: number;
  storage_key: string;
  size_bytes: number;
  content_type: string;
  sha256: string;
}

export const mediaRepository = {
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
};
