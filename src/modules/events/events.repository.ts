import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { EventsTable } from '../../db/types.ts';

export type NewEvent = Omit<Insertable<EventsTable>, 'business_id' | 'id' | 'data'> & { data: Record<string, unknown> };

export const eventsRepository = {
  async insertMany(db: Db, rows: Insertable<EventsTable>[]): Promise<void> {
    if (rows.length === 0) return;
    await db
      .insertInto('events')
      .values(rows.map((r) => ({ ...r, data: JSON.stringify(r.data ?? {}) })))
      .execute();
  },
};
