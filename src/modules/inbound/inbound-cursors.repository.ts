import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';

/** A polled channel's row: which business and channel, and the cursor its reading stands at. */
export interface HeldCursor {
  cursor: Record<string, unknown> | null;
}

/**
 * The reading of polled channels (inbound_cursors, migration 0037): each channel is read by the
 * process holding its lease, which writes the cursor with the messages it stored.
 */
export const inboundCursorsRepository = {
  /** The channels of the given provider kinds, every business's (the poller reads them all). */
  async channelsOfKinds(db: Db, kinds: readonly string[]): Promise<ChannelRow[]> {
    if (kinds.length === 0) return [];
    return db
      .selectFrom('channels')
      .selectAll()
      .where('provider_kind', 'in', [...kinds])
      .execute();
  },

  /**
   * Takes the channel's lease for `holder` for `leaseMs` when nobody holds it, or its holder let
   * it lapse (a process that died), or `holder` holds it already (a renewal): the cursor then, or
   * undefined when another process holds it.
   */
  async claim(
    db: Db,
    channel: { business_id: string; id: string },
    holder: string,
    leaseMs: number,
  ): Promise<HeldCursor | undefined> {
    await db
      .insertInto('inbound_cursors')
      .values({ business_id: channel.business_id, channel_id: channel.id, cursor: null })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const row = await db
      .updateTable('inbound_cursors')
      .set({ holder, held_until: sql`now() + ${`${leaseMs} milliseconds`}::interval` })
      .where('business_id', '=', channel.business_id)
      .where('channel_id', '=', channel.id)
      .where((eb) =>
        eb.or([eb('holder', 'is', null), eb('holder', '=', holder), eb('held_until', '<', sql<string>`now()`)]),
      )
      .returning('cursor')
      .executeTakeFirst();
    return row && { cursor: row.cursor };
  },

  /** Moves the cursor, in the transaction storing what was read; false when `holder` lost the lease meanwhile. */
  async advance(
    trx: Db,
    channel: { business_id: string; id: string },
    holder: string,
    cursor: Record<string, unknown>,
  ): Promise<boolean> {
    const row = await trx
      .updateTable('inbound_cursors')
      .set({ cursor: JSON.stringify(cursor), updated_at: sql`now()` })
      .where('business_id', '=', channel.business_id)
      .where('channel_id', '=', channel.id)
      .where('holder', '=', holder)
      .returning('channel_id')
      .executeTakeFirst();
    return row !== undefined;
  },

  /** Gives the lease back (a channel deleted or stopped reading, the process closing). */
  async release(db: Db, channel: { business_id: string; id: string }, holder: string): Promise<void> {
    await db
      .updateTable('inbound_cursors')
      .set({ holder: null, held_until: null })
      .where('business_id', '=', channel.business_id)
      .where('channel_id', '=', channel.id)
      .where('holder', '=', holder)
      .execute();
  },
};
