import type { Static } from 'typebox';
import type { Db } from '../../db/database.ts';
import { conflict, invalid, notFound } from '../../lib/domain-errors.ts';
import { normalisePhone } from '../../lib/phone.ts';
import { conversationsRepository } from './conversations.repository.ts';
import type { ConversationLookup, ConversationLookupQuery } from './conversations.schemas.ts';

/** Matches beyond one are a conflict; this many ids are enough to name them in the 409. */
const MATCH_LIMIT = 50;

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A query string is text, but a custom field may hold a number or a boolean: "42" also matches 42,
 * "true" also matches true.
 */
function fieldValues(value: string): unknown[] {
  if (value === 'true' || value === 'false') return [value, value === 'true'];
  if (JSON_NUMBER.test(value) && Number.isFinite(Number(value))) return [value, Number(value)];
  return [value];
}

const hasFieldValue = (customFields: Record<string, unknown>, key: string, values: unknown[]) =>
  Object.hasOwn(customFields, key) && values.includes(customFields[key]);

export class ConversationsService {
  constructor(private readonly db: Db) {}

  /**
   * The one conversation of the one contact the filters identify (all filters must match). One
   * statement on the phone path (contacts, their conversations and the latest messages, each an
   * index probe); a field lookup checks the field definition first, then reads in three queries.
   */
  async lookup(businessId: string, query: ConversationLookupQuery): Promise<LookupAnswer> {
    const { phone, field_key: fieldKey, field_value: fieldValue } = query;
    if ((fieldKey === undefined) !== (fieldValue === undefined)) {
      throw invalid('field_key and field_value must be sent together');
    }
    if (phone === undefined && fieldKey === undefined) {
      throw invalid('send at least one lookup method: phone, or field_key with field_value');
    }
    const phoneKey = phone === undefined ? undefined : normalisePhone(phone)?.key;
    if (phone !== undefined && phoneKey === undefined) {
      throw invalid('phone must be a phone number: digits with country code', [
        { location: 'querystring', path: '/phone', message: 'not a phone number' },
      ]);
    }
    const values = fieldValue === undefined ? [] : fieldValues(fieldValue);
    if (fieldKey !== undefined && !(await conversationsRepository.fieldDefined(this.db, businessId, fieldKey))) {
      throw invalid(`field_key "${fieldKey}" is not a contact field of this business`, [
        { location: 'querystring', path: '/field_key', message: 'unknown contact field' },
      ]);
    }

    const { contact, conversations, answer } =
      phoneKey !== undefined
        ? await this.byPhone(businessId, phoneKey, fieldKey, values, query.message_limit)
        : await this.byField(businessId, fieldKey as string, values);
    if (conversations.length === 0) throw notFound('conversation');
    if (conversations.length > 1) {
      throw conflict(
        `the contact has ${conversations.length} conversations`,
        conversations.map((c) => ({ conversation_id: c.id, platform: c.channel })),
      );
    }
    if (answer !== undefined) return { json: answer };
    const conversation = conversations[0];

    const latest = await conversationsRepository.latestMessages(
      this.db,
      businessId,
      conversation.id,
      query.message_limit,
    );
    return {
      contact: {
        id: contact.id,
        first_name: contact.first_name,
        last_name: contact.last_name,
        phone_number: contact.phone_number,
      },
      conversation: {
        id: conversation.id,
        platform: conversation.channel,
        created_at: conversation.created_at,
        last_message_at: conversation.last_message_at,
        message_count: conversation.message_count,
        messages: latest.reverse(),
      },
    };
  }

  /**
   * The one contact of the phone (and field, when sent) with its conversations, and the answer
   * when the statement wrote it (a single contact-conversation pair): one statement on the common
   * path (phoneLookupQuery); 404/409 on zero or several contacts.
   */
  private async byPhone(
    businessId: string,
    phoneKey: string,
    fieldKey: string | undefined,
    values: unknown[],
    messageLimit: number,
  ): Promise<Match> {
    const rows = await conversationsRepository.phoneLookup(this.db, businessId, phoneKey, MATCH_LIMIT, messageLimit);
    const contacts = new Map<string, Match>();
    // One row per contact-conversation pair (a contact without conversations has one, with nulls).
    for (const row of rows) {
      if (fieldKey !== undefined && !hasFieldValue(row.custom_fields, fieldKey, values)) continue;
      let match = contacts.get(row.id);
      if (!match) {
        match = { contact: row, conversations: [] };
        contacts.set(row.id, match);
      }
      if (
        row.conversation_id !== null &&
        row.channel !== null &&
        row.conversation_created_at !== null &&
        row.message_count !== null
      ) {
        match.conversations.push({
          id: row.conversation_id,
          channel: row.channel,
          created_at: row.conversation_created_at,
          last_message_at: row.last_message_at,
          message_count: row.message_count,
        });
      }
    }
    const match = onlyOne([...contacts.values()]);
    // The statement writes the answer only for a single pair; otherwise the caller builds it.
    const answer = rows.length === 1 ? rows[0].answer : null;
    return answer === null ? match : { ...match, answer };
  }

  /** The one contact whose custom field holds the value, then its conversations. */
  private async byField(businessId: string, fieldKey: string, values: unknown[]): Promise<Match> {
    const contacts = await conversationsRepository.contactsByCustomField(
      this.db,
      businessId,
      fieldKey,
      values,
      MATCH_LIMIT,
    );
    const { contact } = onlyOne(contacts.map((c) => ({ contact: c, conversations: [] })));
    return {
      contact,
      conversations: await conversationsRepository.ofContact(this.db, businessId, contact.id, MATCH_LIMIT),
    };
  }
}

/**
 * The 200 answer of a lookup, or its JSON text when the database wrote it (phoneLookupQuery), to
 * be sent as it is.
 */
export type LookupAnswer = Static<typeof ConversationLookup> | { json: string };

interface Match {
  contact: { id: string; first_name: string; last_name: string; phone_number: string | null };
  conversations: {
    id: string;
    channel: string;
    created_at: string;
    last_message_at: string | null;
    message_count: number;
  }[];
  /** The lookup's answer as JSON text, when the database wrote it. */
  answer?: string;
}

function onlyOne(matches: Match[]): Match {
  if (matches.length === 0) throw notFound('contact');
  if (matches.length > 1) {
    throw conflict(
      `${matches.length} contacts match; narrow the lookup`,
      matches.map((m) => ({ contact_id: m.contact.id })),
    );
  }
  return matches[0];
}
