import { sql } from 'kysely';
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
      (eb) =>
        eb
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
      'c.id',
      'c.first_name',
      'c.last_name',
      'c.phone_number',
      'c.custom_fields',
      'c.created_at as contact_created_at',
      'v.id as conversation_id',
      'v.channel',
      'v.created_at as conversation_created_at',
      'v.last_message_at',
      'v.message_count',
    ])
    .orderBy('c.created_at')
    .orderBy('c.id')
    .orderBy('v.created_at')
    .orderBy('v.id');
}

/** A timestamptz column as the API writes it (src/db/timestamps.ts). */
const iso = (column: string) => sql.raw(isoTimestampSql(column));

/**
 * The 200 answer of the lookup for the pair `p`, as JSON text (null unless `pairs` holds exactly
 * one pair and it has a conversation): the contact, the conversation and its latest `messageLimit`
 * messages, oldest first, with the keys in the order of the ConversationLookup schema, compact, as
 * the service would serialise it.
 *
 * The database writes it so the service can send it as it is: decoding the rows of a lookup and
 * serialising them again was most of the service's work per request, and most of its garbage
 * collection (docs/PERFORMANCE-CHOICES.md#answers-written-by-the-database). The parts are joined as text: nesting
 * the messages as a `json` value made PostgreSQL parse the 2 KB it had just written, about a tenth
 * of the statement's CPU. The conversation's object is written without its closing brace, which
 * follows the messages. `string_agg` rather than `json_agg`, which puts a space after each comma.
 */
function answerSql(businessId: string, messageLimit: number) {
  return sql<string | null>`case when p.conversation_id is not null and (select count(*) from pairs) = 1 then
    '{"contact":' || (select row_to_json(c)::text from (select p.id, p.first_name, p.last_name, p.phone_number) c)
    || ',"conversation":' || left((select row_to_json(v)::text from (select p.conversation_id as id, p.channel as platform,
      ${iso('p.conversation_created_at')} as created_at, ${iso('p.last_message_at')} as last_message_at, p.message_count) v), -1)
    || ',"messages":' || coalesce((
      select '[' || string_agg(j.message, ',' order by l.created_at, l.id) || ']'
      from (
        select m.id, m.text, m.direction, m.status, m.error, m.created_at from messages m
        where m.business_id = ${businessId} and m.conversation_id = p.conversation_id
        order by m.created_at desc, m.id desc limit ${messageLimit}
      ) l
      cross join lateral (
        select row_to_json(o)::text as message
        from (select l.id, l.text, l.direction, l.status, l.error, ${iso('l.created_at')} as created_at) o
      ) j
    ), '[]') || '}}' end`;
}

/**
 * The pairs above, each with the lookup's answer when it is the only one (answerSql): the whole
 * lookup in one statement, one row per pair. With several pairs there is no answer: the lookup
 * answers 409, or a field filter picks one pair and the service reads its messages apart.
 * `(select count(*) from pairs)` runs once.
 */
function phoneLookupQuery(db: Db, businessId: string, phoneKey: string, matchLimit: number, messageLimit: number) {
  return db
    .with('pairs', () => contactsWithConversationsQuery(db, businessId, phoneKey, matchLimit))
    .selectFrom('pairs as p')
    .selectAll('p')
    .select(answerSql(businessId, messageLimit).as('answer'))
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
   * Contacts whose custom field `key` holds one of `values` (none a merge hid). Each value is a jsonb
   * containment test, which the GIN index contacts_custom_fields answers; business_id filters what it
   * returns.
   */
  contactsByCustomField(db: Db, businessId: string, key: string, values: unknown[], limit: number) {
    return db
      .selectFrom('contacts')
      .select(['id', 'first_name', 'last_name', 'phone_number'])
      .where('business_id', '=', businessId)
      .where('merged_into', 'is', null)
      .where((eb) =>
        eb.or(values.map((value) => eb(sql`custom_fields`, '@>', sql`${JSON.stringify({ [key]: value })}::jsonb`))),
      )
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
   * The latest `limit` messages of a conversation, newest first (index messages_conversation), for
   * the answers the lookup statement does not write (a field lookup, or a field picking one of
   * several contacts of a phone): the query of messagesRepository.latestOfConversation, compiled
   * once.
   */
  latestMessages: compiledOnce(LOOKUP_PLACEHOLDERS, (db, businessId, conversationId, limit) =>
    db
      .selectFrom('messages')
      .select(['id', 'text', 'direction', 'status', 'error', 'created_at'])
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit),
  ),

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
  /** The contact's latest conversations, newest first (index conversations_contact): the dashboard's contact page. */
  latestOfContact(db: Db, businessId: string, contactId: string, limit: number) {
    return db
      .selectFrom('conversations')
      .select(['id', 'channel', 'created_at', 'last_message_at', 'message_count', 'closed_at'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  },

  /** How many conversations the contact has (what deleting it removes). */
  async countOfContact(db: Db, businessId: string, contactId: string): Promise<number> {
    const row = await db
      .selectFrom('conversations')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  },
};
