import parseJson from 'secure-json-parse';
import { Compile } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';
import { registerStorableFormats } from '../../lib/formats.ts';
import { jsonProblem, underflowProblem } from '../../lib/json-check.ts';
import { normalisePhone } from '../../lib/phone.ts';
import type { ContactImportRow } from '../contacts/contacts.repository.ts';
import type { ConversationImportRow } from '../conversations/conversation-store.repository.ts';
import type { EventImportRow } from '../events/events.repository.ts';
import type { MessageImportRow } from '../messages/messages.repository.ts';
import { ContactRecord, ConversationRecord, EventRecord, MessageRecord } from './import.schemas.ts';

/** A line turned into the row of one table, or the reason it cannot be. */
export type ParsedLine =
  | { table: 'contacts'; row: ContactImportRow }
  | { table: 'conversations'; row: ConversationImportRow }
  | { table: 'messages'; row: MessageImportRow }
  | { table: 'events'; row: EventImportRow }
  | { error: string };

// Compiled once per process: checking a record is then a plain function call. Its UUIDs and
// date-times are checked as the HTTP validator checks them.
registerStorableFormats();
const validators = {
  contact: Compile(ContactRecord),
  conversation: Compile(ConversationRecord),
  message: Compile(MessageRecord),
  event: Compile(EventRecord),
};
type Kind = keyof typeof validators;
const isKind = (value: unknown): value is Kind => typeof value === 'string' && Object.hasOwn(validators, value);

function describe(errors: TLocalizedValidationError[]): string {
  const unknown = errors.find((e) => e.keyword === 'additionalProperties');
  if (unknown) return `unknown field "${unknown.params.additionalProperties[0]}"`;
  const first = errors.find((e) => e.keyword !== 'boolean') ?? errors[0];
  return first ? `${first.instancePath || '/'} ${first.message}` : 'invalid record';
}

// Ids are compared with what PostgreSQL returns, which is lower case.
const lower = (id: string) => id.toLowerCase();
const lowerOrNull = (id: string | null | undefined) => (id ? id.toLowerCase() : null);

/**
 * Message and event records may carry "type" twice (docs/API-GUIDE.md#import-records): the record
 * kind first, then the message's or event's own type. JSON keeps the last of repeated keys, so such
 * a line arrives with its own type in "type". Those records are recognised by the field only they carry (a message's
 * `direction`, an event's `actor_type`), and their own type moves to message_type / event_type, the
 * unambiguous spelling this service also accepts.
 */
function withRecordKind(record: Record<string, unknown>): Record<string, unknown> {
  const { type } = record;
  if (isKind(type) || typeof type !== 'string') return record;
  if ('direction' in record && !('message_type' in record)) return { ...record, type: 'message', message_type: type };
  if ('actor_type' in record && !('event_type' in record)) return { ...record, type: 'event', event_type: type };
  return record;
}

/** Parses and validates one NDJSON line; timestamps stay the strings given, for PostgreSQL to read. */
export function parseLine(text: string): ParsedLine {
  let value: unknown;
  try {
    value = parseJson(text, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    return { error: `malformed JSON: ${(err as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { error: 'a record must be a JSON object' };
  const problem = jsonProblem(value) ?? underflowProblem(text);
  if (problem) return { error: `${problem.path} ${problem.message}` };
  value = withRecordKind(value as Record<string, unknown>);
  const kind = (value as { type?: unknown }).type;
  if (!isKind(kind)) {
    return {
      error: `unknown record type ${JSON.stringify(kind ?? null)}: expected contact, conversation, message or event (a message's own type goes in message_type, an event's in event_type)`,
    };
  }
  const validator = validators[kind];
  if (!validator.Check(value)) return { error: describe(validator.Errors(value)) };

  switch (kind) {
    case 'contact': {
      const r = value as ContactRecord;
      let phone: { digits: string; key: string } | undefined;
      if (r.phone_number) {
        phone = normalisePhone(r.phone_number);
        if (!phone) return { error: `phone_number "${r.phone_number}" is not a valid phone number with country code` };
      }
      return {
        table: 'contacts',
        row: {
          id: lower(r.id),
          first_name: r.first_name ?? '',
          last_name: r.last_name ?? '',
          email: r.email || null,
          phone_number: phone?.digits ?? null,
          phone_key: phone?.key ?? null,
          external_id: r.external_id ?? null,
          tags: r.tags ?? [],
          custom_fields: r.custom_fields ?? {},
          is_test: r.is_test ?? false,
          created_at: r.created_at,
        },
      };
    }
    case 'conversation': {
      const r = value as ConversationRecord;
      return {
        table: 'conversations',
        row: {
          id: lower(r.id),
          contact_id: lower(r.contact_id),
          channel: r.channel,
          channel_id: lowerOrNull(r.channel_id),
          created_at: r.created_at,
          closed_at: r.closed_at ?? null,
        },
      };
    }
    case 'message': {
      const r = value as MessageRecord;
      return {
        table: 'messages',
        row: {
          id: lower(r.id),
          conversation_id: lower(r.conversation_id),
          direction: r.direction,
          sender_type: r.sender_type,
          type: r.message_type ?? 'text',
          text: r.text ?? '',
          status: r.status,
          error: r.error ?? null,
          metadata: r.metadata ?? {},
          created_at: r.created_at,
        },
      };
    }
    case 'event': {
      const r = value as EventRecord;
      // A contact field change belongs to the contact alone; every other type to a conversation.
      const contactLevel = r.event_type === 'contact_field_changed';
      if (contactLevel && r.conversation_id)
        return { error: 'a contact_field_changed event has no conversation: conversation_id must be null' };
      if (!contactLevel && !r.conversation_id) return { error: `a ${r.event_type} event needs its conversation_id` };
      return {
        table: 'events',
        row: {
          id: lower(r.id),
          conversation_id: lowerOrNull(r.conversation_id),
          contact_id: lower(r.contact_id),
          type: r.event_type,
          actor_type: r.actor_type,
          data: r.data ?? {},
          created_at: r.created_at,
        },
      };
    }
  }
}
