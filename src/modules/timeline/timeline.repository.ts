import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { CursorPosition } from '../../http/cursor.ts';
import { EVENT_TYPES } from '../events/events.writer.ts';
import { eventExportColumns, messageExportColumns } from '../exports/exports.repository.ts';

const before = (alias: string, at?: CursorPosition) =>
  at
    ? sql<boolean>`(${sql.ref(`${alias}.created_at`)}, ${sql.ref(`${alias}.id`)}) < (${at.createdAt}::timestamptz, ${at.id}::uuid)`
    : sql<boolean>`true`;

export const timelineRepository = {
  /**
   * The contact's messages before a position, newest first (index messages_contact read backwards);
   * web-client duplicates left out. `contactIds`: the contact's and those merged into it
   * (historyIds); one reads in index order, several are sorted.
   */
  messages(db: Db, businessId: string, contactIds: string[], at: CursorPosition | undefined, limit: number) {
    return messageExportColumns(db.selectFrom('messages'))
      .where('messages.business_id', '=', businessId)
      .where('messages.contact_id', 'in', contactIds)
      .where(sql<boolean>`not messages.duplicate`)
      .where(before('messages', at))
      .orderBy('messages.created_at', 'desc')
      .orderBy('messages.id', 'desc')
      .limit(limit)
      .execute();
  },

  /**
   * The contact's events before a position, newest first (index events_contact); internal platform
   * events left out. `contactIds` as for messages.
   */
  events(db: Db, businessId: string, contactIds: string[], at: CursorPosition | undefined, limit: number) {
    return eventExportColumns(db.selectFrom('events'))
      .where('events.business_id', '=', businessId)
      .where('events.contact_id', 'in', contactIds)
      .where('events.type', 'in', [...EVENT_TYPES])
      .where(before('events', at))
      .orderBy('events.created_at', 'desc')
      .orderBy('events.id', 'desc')
      .limit(limit)
      .execute();
  },
};
