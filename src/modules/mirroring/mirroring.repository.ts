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

  /** Which of these outbound messages are relayed replies (metadata.relayed_by). */
  async relayedAmong(db: Db, businessId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', businessId)
      .where('id', 'in', ids)
      .where(sql<boolean>`metadata ? 'relayed_by'`)
      .execute();
    return rows.map((r) => r.id);
  },

  /** A relayed reply's channel, key, contact, status and error. */
  relayed(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('messages')
      .select([
        'status',
        'error',
        'contact_id',
        sql<string | null>`metadata->>'relayed_by'`.as('relayed_by'),
        sql<string | null>`metadata->>'relay_key'`.as('relay_key'),
      ])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /**
   * The statuses and errors of the messages one relayed reply was sent as (its text and files), in
   * the order they were written (index messages_contact).
   */
  relayedParts(db: Db, businessId: string, contactId: string, relayedBy: string, key: string) {
    return db
      .selectFrom('messages')
      .select(['status', 'error'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .where('direction', '=', 'outbound')
      .where(sql<boolean>`metadata @> ${JSON.stringify({ relayed_by: relayedBy, relay_key: key })}::jsonb`)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  },
};
