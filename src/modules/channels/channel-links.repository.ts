import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** A channel, as the link tables key it. */
type ChannelKey = { business_id: string; id: string };

/** The link's row, as the dashboard reads it and the adapter reports it. */
export interface ChannelLinkRow {
  state: string;
  qr: string | null;
  pairing_code: string | null;
  pairing_phone: string | null;
  requested: boolean;
  account: string | null;
  updated_at: string;
}

/** Channels linked as a device (channel_links, channel_link_keys; migration 0042). */
export const channelLinksRepository = {
  async find(db: Db, channel: ChannelKey): Promise<ChannelLinkRow | undefined> {
    return db
      .selectFrom('channel_links')
      .select(['state', 'qr', 'pairing_code', 'pairing_phone', 'requested', 'account', 'updated_at'])
      .where('business_id', '=', channel.business_id)
      .where('channel_id', '=', channel.id)
      .executeTakeFirst();
  },

  /** Writes the given columns of the link's row, made when missing. */
  async upsert(db: Db, channel: ChannelKey, values: Partial<Omit<ChannelLinkRow, 'updated_at'>>): Promise<void> {
    await db
      .insertInto('channel_links')
      .values({ business_id: channel.business_id, channel_id: channel.id, ...values })
      .onConflict((oc) => oc.columns(['business_id', 'channel_id']).doUpdateSet({ ...values, updated_at: sql`now()` }))
      .execute();
  },

  /** Hands the pairing phone over once: the number, cleared in the same statement. */
  async takePairingPhone(db: Db, channel: ChannelKey): Promise<string | null> {
    const row = await db
      .with('taken', (qb) =>
        qb
          .selectFrom('channel_links')
          .select('pairing_phone')
          .where('business_id', '=', channel.business_id)
          .where('channel_id', '=', channel.id)
          .where('pairing_phone', 'is not', null)
          .forUpdate(),
      )
      .updateTable('channel_links')
      .set({ pairing_phone: null })
      .from('taken')
      .where('channel_links.business_id', '=', channel.business_id)
      .where('channel_links.channel_id', '=', channel.id)
      .returning('taken.pairing_phone')
      .executeTakeFirst();
    return row?.pairing_phone ?? null;
  },

  async readKeys(db: Db, channel: ChannelKey, keys: readonly string[]): Promise<{ key: string; value: string }[]> {
    if (keys.length === 0) return [];
    return db
      .selectFrom('channel_link_keys')
      .select(['key', 'value'])
      .where('business_id', '=', channel.business_id)
      .where('channel_id', '=', channel.id)
      .where('key', 'in', [...keys])
      .execute();
  },

  /** Stores the values and removes the keys given null, in one transaction. */
  async writeKeys(db: Db, channel: ChannelKey, entries: ReadonlyMap<string, string | null>): Promise<void> {
    const stored = [...entries].flatMap(([key, value]) => (value === null ? [] : [{ key, value }]));
    const removed = [...entries].flatMap(([key, value]) => (value === null ? [key] : []));
    await db.transaction().execute(async (trx) => {
      if (removed.length > 0)
        await trx
          .deleteFrom('channel_link_keys')
          .where('business_id', '=', channel.business_id)
          .where('channel_id', '=', channel.id)
          .where('key', 'in', removed)
          .execute();
      if (stored.length > 0)
        await trx
          .insertInto('channel_link_keys')
          .values(stored.map((s) => ({ business_id: channel.business_id, channel_id: channel.id, ...s })))
          .onConflict((oc) =>
            oc.columns(['business_id', 'channel_id', 'key']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })),
          )
          .execute();
    });
  },

  /** A page of every link's keys, in key order after `after` (the resealing at start walks them all). */
  async keysAfter(
    db: Db,
    after: { business_id: string; channel_id: string; key: string } | undefined,
    limit: number,
  ): Promise<{ business_id: string; channel_id: string; key: string; value: string }[]> {
    let query = db
      .selectFrom('channel_link_keys')
      .select(['business_id', 'channel_id', 'key', 'value'])
      .orderBy('business_id')
      .orderBy('channel_id')
      .orderBy('key')
      .limit(limit);
    if (after)
      query = query.where(
        sql<boolean>`(business_id, channel_id, key) > (${after.business_id}::uuid, ${after.channel_id}::uuid, ${after.key})`,
      );
    return query.execute();
  },

  /** Replaces a key's value if it is still the one read; false when it changed (or went) meanwhile. */
  async replaceKeyIf(
    db: Db,
    row: { business_id: string; channel_id: string; key: string; value: string },
    value: string,
  ): Promise<boolean> {
    const result = await db
      .updateTable('channel_link_keys')
      .set({ value })
      .where('business_id', '=', row.business_id)
      .where('channel_id', '=', row.channel_id)
      .where('key', '=', row.key)
      .where('value', '=', row.value)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  },

  async clearKeys(db: Db, channel: ChannelKey): Promise<void> {
    await db
      .deleteFrom('channel_link_keys')
      .where('business_id', '=', channel.business_id)
      .where('channel_id', '=', channel.id)
      .execute();
  },
};
