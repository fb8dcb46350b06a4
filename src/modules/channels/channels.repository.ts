import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ChannelsTable } from '../../db/types.ts';

export type ChannelRow = Selectable<ChannelsTable>;

export const channelsRepository = {
  insert(db: Db, row: Insertable<ChannelsTable>): Promise<ChannelRow> {
    return db
      .insertInto('channels')
      .values({ ...row, provider_config: JSON.stringify(row.provider_config ?? {}) })
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  find(db: Db, businessId: string, id: string): Promise<ChannelRow | undefined> {
    return db.selectFrom('channels').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
  },

  findByIdentifier(db: Db, businessId: string, type: string, identifier: string): Promise<ChannelRow | undefined> {
    return db
      .selectFrom('channels')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('type', '=', type)
      .where('identifier', '=', identifier)
      .executeTakeFirst();
  },

  /** Across businesses (index channels_provider_account): a notification names only the provider's account. */
  findByProviderAccount(db: Db, kind: string, account: string): Promise<ChannelRow | undefined> {
    return db.selectFrom('channels').selectAll().where('provider_kind', '=', kind).where('provider_account', '=', account).executeTakeFirst();
  },

  /**
   * A channel of the kind whose provider config holds one of `values` under `key` (the digests of the
   * verify token of Meta's handshake, which names no account). Scans the kind's channels: the
   * handshake is rare.
   */
  findByProviderSetting(db: Db, kind: string, key: string, values: string[]): Promise<ChannelRow | undefined> {
    return db
      .selectFrom('channels')
      .selectAll()
      .where('provider_kind', '=', kind)
      .where(sql<string>`provider_config ->> ${key}`, 'in', values)
      .orderBy('created_at')
      .limit(1)
      .executeTakeFirst();
  },

  /** Channels with a provider, of every business, in (business_id, id) order after `after`: a maintenance pass. */
  withProviderAfter(db: Db, after: { business_id: string; id: string } | undefined, limit: number): Promise<ChannelRow[]> {
    let query = db.selectFrom('channels').selectAll().where('provider_kind', 'is not', null);
    if (after) query = query.where((eb) => eb(eb.refTuple('business_id', 'id'), '>', eb.tuple(after.business_id, after.id)));
    return query.orderBy('business_id').orderBy('id').limit(limit).execute();
  },

  /** Replaces a channel's provider config if it is still the one `row` was read with (no other writer came between); whether it did. */
  async replaceConfigIf(db: Db, row: ChannelRow, config: unknown): Promise<boolean> {
    const result = await db.updateTable('channels').set({ provider_config: JSON.stringify(config) })
      .where('business_id', '=', row.business_id).where('id', '=', row.id)
      .where(sql<boolean>`provider_config = ${JSON.stringify(row.provider_config)}::jsonb`)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },

  list(db: Db, businessId: string, limit: number): Promise<ChannelRow[]> {
    return db.selectFrom('channels').selectAll().where('business_id', '=', businessId).orderBy('created_at').orderBy('id').limit(limit).execute();
  },

  update(db: Db, businessId: string, id: string, changes: Updateable<ChannelsTable>): Promise<ChannelRow | undefined> {
    const values = changes.provider_config === undefined ? changes : { ...changes, provider_config: JSON.stringify(changes.provider_config) };
    return db.updateTable('channels').set(values).where('business_id', '=', businessId).where('id', '=', id).returningAll().executeTakeFirst();
  },

  async remove(db: Db, businessId: string, id: string): Promise<ChannelRow | undefined> {
    return db.deleteFrom('channels').where('business_id', '=', businessId).where('id', '=', id).returningAll().executeTakeFirst();
  },
};
