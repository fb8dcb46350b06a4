import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ChannelsTable } from '../../db/types.ts';

export type ChannelRow = Selectable<ChannelsTable>;

/** The NOTIFY channel on which a change of a channel row is announced to every server process. */
export const CHANNEL_CHANGED = 'channel_changed';

/** What a change announces: enough to find every cached copy of the channel. */
export type ChannelKeys = Pick<ChannelRow, 'business_id' | 'id' | 'provider_kind' | 'provider_account'>;

/** Announces a changed channel to every server process (NOTIFY is sent when the transaction commits). */
async function announce(db: Db, row: ChannelRow | undefined): Promise<void> {
  if (!row) return;
  const keys: ChannelKeys = {
    business_id: row.business_id,
    id: row.id,
    provider_kind: row.provider_kind,
    provider_account: row.provider_account,
  };
  await sql`select pg_notify(${CHANNEL_CHANGED}, ${JSON.stringify(keys)})`.execute(db);
}

/** The channel holding each provider account, across businesses (docs/SCALING.md: a reference table). */
export const channelAccountsRepository = {
  find(db: Db, kind: string, account: string) {
    return db
      .selectFrom('channel_accounts')
      .select(['business_id', 'channel_id'])
      .where('provider_kind', '=', kind)
      .where('provider_account', '=', account)
      .executeTakeFirst();
  },

  /** The holders of these accounts of one kind, in account order. */
  ofAccounts(db: Db, kind: string, accounts: readonly string[]) {
    if (accounts.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('channel_accounts')
      .select(['provider_account', 'business_id', 'channel_id'])
      .where('provider_kind', '=', kind)
      .where('provider_account', 'in', accounts)
      .orderBy('provider_account')
      .execute();
  },
};

export const channelsRepository = {
  /**
   * Inserts the channel and, when it has one, its provider account (channel_accounts, whose key is the
   * account across businesses: a second channel of the account is refused with a unique violation).
   */
  insert(db: Db, row: Insertable<ChannelsTable>): Promise<ChannelRow> {
    return db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('channels')
        .values({ ...row, provider_config: JSON.stringify(row.provider_config ?? {}) })
        .returningAll()
        .executeTakeFirstOrThrow();
      if (inserted.provider_kind && inserted.provider_account) {
        await trx
          .insertInto('channel_accounts')
          .values({
            provider_kind: inserted.provider_kind,
            provider_account: inserted.provider_account,
            business_id: inserted.business_id,
            channel_id: inserted.id,
          })
          .execute();
      }
      return inserted;
    });
  },

  find(db: Db, businessId: string, id: string): Promise<ChannelRow | undefined> {
    return db
      .selectFrom('channels')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
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

  /**
   * For each of the channels, the business's channel of `type` with the same identifier, keyed by
   * the channel's id (those without one are absent).
   */
  async sameIdentifier(
    db: Db,
    businessId: string,
    channelIds: string[],
    type: string,
  ): Promise<Map<string, Pick<ChannelRow, 'id' | 'type'>>> {
    if (channelIds.length === 0) return new Map();
    const rows = await db
      .selectFrom('channels as c')
      .innerJoin('channels as p', (j) =>
        j.onRef('p.business_id', '=', 'c.business_id').onRef('p.identifier', '=', 'c.identifier'),
      )
      .select(['c.id as of', 'p.id', 'p.type'])
      .where('c.business_id', '=', businessId)
      .where('c.id', 'in', channelIds)
      .where('p.type', '=', type)
      .execute();
    return new Map(rows.map(({ of, ...row }) => [of, row]));
  },

  /**
   * Across businesses: a notification names only the provider's account. Two lookups, each by its
   * table's key, rather than a join, so each reads one shard once the tables are distributed.
   */
  async findByProviderAccount(db: Db, kind: string, account: string): Promise<ChannelRow | undefined> {
    const holder = await channelAccountsRepository.find(db, kind, account);
    return holder && channelsRepository.find(db, holder.business_id, holder.channel_id);
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
  withProviderAfter(
    db: Db,
    after: { business_id: string; id: string } | undefined,
    limit: number,
  ): Promise<ChannelRow[]> {
    let query = db.selectFrom('channels').selectAll().where('provider_kind', 'is not', null);
    if (after)
      query = query.where((eb) => eb(eb.refTuple('business_id', 'id'), '>', eb.tuple(after.business_id, after.id)));
    return query.orderBy('business_id').orderBy('id').limit(limit).execute();
  },

  /**
   * Replaces a channel's provider config if it is still the one `row` was read with (no other writer came
   * between); whether it did.
   */
  replaceConfigIf(db: Db, row: ChannelRow, config: unknown): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      const replaced = await trx
        .updateTable('channels')
        .set({ provider_config: JSON.stringify(config) })
        .where('business_id', '=', row.business_id)
        .where('id', '=', row.id)
        .where(sql<boolean>`provider_config = ${JSON.stringify(row.provider_config)}::jsonb`)
        .returningAll()
        .executeTakeFirst();
      await announce(trx, replaced);
      return replaced !== undefined;
    });
  },

  list(db: Db, businessId: string, limit: number): Promise<ChannelRow[]> {
    return db
      .selectFrom('channels')
      .selectAll()
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /** The business's channels of these provider kinds (the few that mirror the others, say). */
  ofKinds(db: Db, businessId: string, kinds: readonly string[]): Promise<ChannelRow[]> {
    if (kinds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('channels')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('provider_kind', 'in', kinds)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  },

  /** Marks the channel's credentials refused (once: a later refusal keeps the first time); undefined if marked. */
  markCredentialsRejected(db: Db, businessId: string, id: string): Promise<ChannelRow | undefined> {
    return db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('channels')
        .set({ credentials_rejected_at: sql<string>`now()` })
        .where('business_id', '=', businessId)
        .where('id', '=', id)
        .where('credentials_rejected_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      await announce(trx, updated);
      return updated;
    });
  },

  update(db: Db, businessId: string, id: string, changes: Updateable<ChannelsTable>): Promise<ChannelRow | undefined> {
    const values =
      changes.provider_config === undefined
        ? changes
        : { ...changes, provider_config: JSON.stringify(changes.provider_config) };
    return db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('channels')
        .set(values)
        .where('business_id', '=', businessId)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      await announce(trx, updated);
      return updated;
    });
  },

  remove(db: Db, businessId: string, id: string): Promise<ChannelRow | undefined> {
    return db.transaction().execute(async (trx) => {
      // The foreign key would delete it too, but a distributed database keeps no foreign key from a
      // reference table (docs/SCALING.md).
      await trx
        .deleteFrom('channel_accounts')
        .where('business_id', '=', businessId)
        .where('channel_id', '=', id)
        .execute();
      const removed = await trx
        .deleteFrom('channels')
        .where('business_id', '=', businessId)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      await announce(trx, removed);
      return removed;
    });
  },
};
