import type { Static } from 'typebox';
import type { Db } from '../../db/database.ts';
import { badRequest, conflict, notFound } from '../../http/errors.ts';
import { normalisePhone } from '../../lib/phone.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
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
   * The one conversation of the one contact the filters identify (all filters must match). Three
   * indexed queries on the phone path: contact, its conversations, the latest messages; a field
   * lookup checks the field definition first.
   */
  async lookup(businessId: string, query: ConversationLookupQuery): Promise<Static<typeof ConversationLookup>> {
    const { phone, field_key: fieldKey, field_value: fieldValue } = query;
    if ((fieldKey === undefined) !== (fieldValue === undefined)) {
      throw badRequest('field_key and field_value must be sent together');
    }
    if (phone === undefined && fieldKey === undefined) {
      throw badRequest('send at least one lookup method: phone, or field_key with field_value');
    }
    const phoneKey = phone === undefined ? undefined : normalisePhone(phone)?.key;
    if (phone !== undefined && phoneKey === undefined) {
      throw badRequest('phone must be a phone number: digits with country code', [{ location: 'querystring', path: '/phone', message: 'not a phone number' }]);
    }
    const values = fieldValue === undefined ? [] : fieldValues(fieldValue);
    if (fieldKey !== undefined && !(await conversationsRepository.fieldDefined(this.db, businessId, fieldKey))) {
      throw badRequest(`field_key "${fieldKey}" is not a contact field of this business`, [{ location: 'querystring', path: '/field_key', message: 'unknown contact field' }]);
    }

    const contacts = phoneKey !== undefined
      ? (await contactsRepository.findByIdentifiers(this.db, businessId, { phoneKey }, MATCH_LIMIT))
          .filter((c) => fieldKey === undefined || hasFieldValue(c.custom_fields, fieldKey, values))
      : await conversationsRepository.contactsByCustomField(this.db, businessId, fieldKey as string, values, MATCH_LIMIT);
    if (contacts.length === 0) throw notFound('contact');
    if (contacts.length > 1) {
      throw conflict(`${contacts.length} contacts match; narrow the lookup`, contacts.map((c) => ({ contact_id: c.id })));
    }
    const contact = contacts[0];

    const conversations = await conversationsRepository.ofContact(this.db, businessId, contact.id, MATCH_LIMIT);
    if (conversations.length === 0) throw notFound('conversation');
    if (conversations.length > 1) {
      throw conflict(`the contact has ${conversations.length} conversations`, conversations.map((c) => ({ conversation_id: c.id, platform: c.channel })));
    }
    const conversation = conversations[0];

    const latest = await messagesRepository.latestOfConversation(this.db, businessId, conversation.id, query.message_limit);
    return {
      contact: { id: contact.id, first_name: contact.first_name, last_name: contact.last_name, phone_number: contact.phone_number },
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
}
