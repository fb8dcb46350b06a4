import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** What a mirror reads of a message: one statement joining its contact's name and its channel's address. */
export const mirroringRepository = {
  /** An inbound message with its sender's name and the identifier of the channel it came through. */
  message(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('messages as m')
      .leftJoin('contacts as c', (j) =>
        j.onRef('c.business_id', '=', 'm.business_id').onRef('c.id', '=', 'm.contact_id'),
      )
      .leftJoin('channels as ch', (j) =>
        j.onRef('ch.business_id', '=', 'm.business_id').onRef('ch.id', '=', 'm.channel_id'),
      )
      .select([
        'm.id',
        'm.conversation_id',
        'm.channel',
        'm.channel_id',
        'm.type',
        'm.text',
        'm.created_at',
        'm.direction',
        'm.sender_address',
        'ch.identifier as channel_identifier',
        'ch.provider_kind as channel_kind',
        sql<string | null>`nullif(trim(concat_ws(' ', c.first_name, c.last_name)), '')`.as('sender_name'),
      ])
      .where('m.business_id', '=', businessId)
      .where('m.id', '=', id)
      .executeTakeFirst();
  },
};
