import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

export type ImportTable = 'contacts' | 'conversations' | 'messages' | 'events';

/*
 * The rows of an import go in through their owners' repositories, a batch per statement
 * (contactsRepository, conversationStoreRepository, messagesRepository and eventsRepository's
 * insertImported): an id that exists is skipped, and a row whose parent is not this business's is
 * left out, never a failure. This reads which rows are there afterwards, to name the rows left out.
 */
export const importRepository = {
  /** Which of `ids` exist in `table` for this business (the slow path: after a batch left rows out). */
  async existing(db: Db, businessId: string, table: ImportTable, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const result = await sql<{
      id: string;
    }>`SELECT id FROM ${sql.table(table)} WHERE business_id = ${businessId}::uuid AND id = ANY(${ids}::text[]::uuid[])`.execute(
      db,
    );
    return new Set(result.rows.map((r) => r.id));
  },
};
