import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { LIVE_CHANNEL } from './live.events.ts';

export const liveRepository = {
  /**
   * Announces payloads on LIVE_CHANNEL in one statement. PostgreSQL sends them when the transaction
   * commits, in this order, to the listeners of every server process, and not at all if it rolls back.
   */
  async announce(db: Db, payloads: readonly string[]): Promise<void> {
    if (payloads.length === 0) return;
    await sql`select pg_notify(${LIVE_CHANNEL}, p) from unnest(${[...payloads]}::text[]) with ordinality as a(p, n) order by n`.execute(
      db,
    );
  },
};
