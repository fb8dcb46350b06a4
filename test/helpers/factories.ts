import { sql, type Insertable } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import type { ContactAliasesTable, ContactsTable, ConversationsTable, MessagesTable } from '../../src/db/types.ts';
import { newId } from '../../src/lib/ids.ts';
import { phoneKey } from '../../src/lib/phone.ts';
import { contactsRepository } from '../../src/modules/contacts/contacts.repository.ts';

/**
 * Rows inserted straight into the database, for tests that need data the public API cannot make
 * (conversations, messages with chosen timestamps). Overrides win over the defaults.
 */
type Overrides<T> = Partial<Omit<Insertable<T>, 'business_id'>>;

/** A contact, through the contacts' writer (with its identities); phone_key follows phone_number unless given. */
export async function insertContact(db: Db, businessId: string, overrides: Overrides<ContactsTable> = {}) {
  const phone = overrides.phone_number ?? null;
  return contactsRepository.insert(db, {
    id: newId(),
    first_name: 'Ada',
    last_name: 'Lovelace',
    email: null,
    phone_key: phone === null ? null : phoneKey(phone),
    ...overrides,
    phone_number: phone,
    business_id: businessId,
  });
}

/** Aliases, as a merge leaves them, through the contacts' writer (which names their addresses' identities). */
export async function insertAliases(
  db: Db,
  rows: Insertable<ContactAliasesTable> | Insertable<ContactAliasesTable>[],
): Promise<void> {
  for (const row of Array.isArray(rows) ? rows : [rows])
    await contactsRepository.addAliases(db, row.business_id, row.contact_id, [{ kind: row.kind, value: row.value }]);
}

export async function insertConversation(
  db: Db,
  businessId: string,
  contactId: string,
  overrides: Overrides<ConversationsTable> = {},
) {
  return db
    .insertInto('conversations')
    .values({ id: newId(), channel: 'whatsapp', ...overrides, contact_id: contactId, business_id: businessId })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * A message of a conversation; keeps the conversation's counters (message_count, last_message_at)
 * as the import does.
 */
export async function insertMessage(
  db: Db,
  businessId: string,
  conversation: { id: string; contact_id: string; channel: string },
  overrides: Overrides<MessagesTable> = {},
) {
  const message = await db
    .insertInto('messages')
    .values({
      id: newId(),
      direction: 'inbound',
      sender_type: 'contact',
      status: 'RECEIVED',
      text: 'hello',
      metadata: {},
      channel: conversation.channel,
      contact_id: conversation.contact_id,
      ...overrides,
      conversation_id: conversation.id,
      business_id: businessId,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await db
    .updateTable('conversations')
    .set((eb) => ({
      message_count: eb('message_count', '+', 1),
      // greatest() skips nulls: the first message sets it.
      last_message_at: sql<string>`greatest(last_message_at, ${message.created_at}::timestamptz)`,
    }))
    .where('business_id', '=', businessId)
    .where('id', '=', conversation.id)
    .execute();
  return message;
}

/** A contact field definition (what field_key lookups accept). */
export async function insertContactField(db: Db, businessId: string, key: string, name = key) {
  return db
    .insertInto('contact_fields')
    .values({ business_id: businessId, id: newId(), key, name })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** An ISO timestamp `seconds` after a fixed origin, with microseconds, for ordering tests. */
export const at = (seconds: number, micros = 0) =>
  new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString().replace('Z', `${String(micros).padStart(3, '0')}Z`);
