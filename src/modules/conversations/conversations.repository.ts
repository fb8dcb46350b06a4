import { sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Db } from '../../db/database.ts';
import { batchedOnce, compiledOnce } from '../../db/prepared-queries.ts';
import { isoTimestampSql } from '../../db/timestamps.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';

/** Stand-ins for the arguments while the hot queries compile once (prepared-queries.ts). */
const LOOKUP_PLACEHOLDERS: [string, string, number] = ['\u0000business', '\u0000key', -1];
const PHONE_LOOKUP_PLACEHOLDERS: [string, string, number, number] = ['\u0000business', '\u0000key', -1, -2];

/**
 * The contacts a phone key identifies (as findByIdentifiers: own phone or alias, oldest first, at
 * most `limit`), each joined with its conversations (oldest first, at most `limit`): one row per
 * pair, or one with null conversation columns for a contact without any.
 */
function contactsWithConversationsQuery(db: Db, businessId: string, phoneKey: string, limit: number) {
  const contacts = contactsRepository.identifiersQuery(db, businessId, { phoneKey }, limit);
  if (!contacts) throw new Error('unreachable: a phone key is an identifier');
  return db
    .selectFrom(contacts.as('c'))
    .leftJoinLateral(
      (eb) => eb
        .selectFrom('conversations as v')
        .select(['v.id', 'v.channel', 'v.created_at', 'v.last_message_at', 'v.message_count'])
        .where('v.business_id', '=', businessId)
        .whereRef('v.contact_id', '=', 'c.id')
        .orderBy('v.created_at')
        .orderBy('v.id')
        .limit(limit)
        .as('v'),
      (join) => join.onTrue(),
    )
    .select([
      'c.id', 'c.first_name', 'c.last_name', 'c.phone_number', 'c.custom_fields', 'c.created_at as contact_created_at',
      'v.id as conversation_id', 'v.channel', 'v.created_at as conversation_created_at', 'v.last_message_at', 'v.message_count',
    ])
    .orderBy('c.created_at')
    .orderBy('c.id')
    .orderBy('v.created_at')
    .orderBy('v.id');
}

/**
 * The pairs above, and when there is exactly one pair (the answer of a successful lookup) the latest
 * `messageLimit` messages of its conversation, newest first, as a JSON array on its row: the whole
 * lookup in one statement, one row per pair. With several pairs the array is empty (the lookup
 * answers 409, or a field filter picks one pair and the service reads its messages apart);
 * `(select count(*) from pairs)` runs once.
 *
 * The messages travel as one JSON value rather than as a row each: rows repeating the pair's
 * columns cost the service a parse of every column of every row and most of its garbage collection
 * (measured: docs/PERFORMANCE.md, session of 2026-11-24). `created_at` is written by isoTimestampSql,
 * as pgTimestampToIso writes it, so the answer is the same either way.
 */
function phoneLookupQuery(db: Db, businessId: string, phoneKey: string, matchLimit: number, messageLimit: number) {
  return db
    .with('pairs', () => contactsWithConversationsQuery(db, businessId, phoneKey, matchLimit))
    .selectFrom('pairs as p')
    .selectAll('p')
    .select((eb) => jsonArrayFrom(
      eb.selectFrom('messages as m')
        .select(['m.id', 'm.text', 'm.direction', 'm.status', 'm.error'])
        .select(sql.raw<string>(isoTimestampSql('m.created_at')).as('created_at'))
        .where('m.business_id', '=', businessId)
        .whereRef('m.conversation_id', '=', 'p.conversation_id')
        .where(sql<boolean>`(select count(*) from pairs) = 1`)
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'desc')
        .limit(messageLimit),
    ).as('messages'))
    .orderBy('p.contact_created_at')
    .orderBy('p.id')
    .orderBy('p.conversation_created_at')
    .orderBy('p.conversation_id');
}

export const conversationsRepository = {
  /** Whether the business defines a contact field with this key (unique index contact_fields_key). */
  async fieldDefined(db: Db, businessId: string, key: string): Promise<boolean> {
    const row = await db
      .selectFrom('contact_fields')
      .select('id')
      .where('business_id', '=', businessId)
      .where('key', '=', key)
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * Contacts whose custom field `key` holds one of `values`. Each value is a jsonb containment test,
   * which the GIN index contacts_custom_fields answers; business_id filters what it returns.
   */
  contactsByCustomField(db: Db, businessId: string, key: string, values: unknown[], limit: number) {
    return db
      .selectFrom('contacts')
      .select(['id', 'first_name', 'last_name', 'phone_number'])
      .where('business_id', '=', businessId)
      .where((eb) => eb.or(values.map((value) => eb(sql`custom_fields`, '@>', sql`${JSON.stringify({ [key]: value })}::jsonb`))))
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /**
   * phoneLookupQuery: contacts, conversations and (for a single pair) its latest messages in one
   * statement, shared by the lookups of concurrent requests (prepared-queries.ts).
   */
  phoneLookup: batchedOnce(PHONE_LOOKUP_PLACEHOLDERS, ['uuid', 'text', 'int4', 'int4'], phoneLookupQuery),

  /**
   * The latest `limit` messages of a conversation, newest first (index messages_conversation): the
   * query of messagesRepository.latestOfConversation, compiled once for this hot path.
   */
  latestMessages: compiledOnce(LOOKUP_PLACEHOLDERS, (db, businessId, conversationId, limit) => db
    .selectFrom('messages')
    .select(['id', 'text', 'direction', 'status', 'error', 'created_at'])
    .where('business_id', '=', businessId)
    .where('conversation_id', '=', conversationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)),

  /** Conversations of a contact, oldest first (index conversations_contact). */
  ofContact(db: Db, businessId: string, contactId: string, limit: number) {
    return db
      .selectFrom('conversations')
      .select(['id', 'channel', 'created_at', 'last_message_at', 'message_count'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },
};
