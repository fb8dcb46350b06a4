import type { ColumnType, Generated } from 'kysely';

/** Timestamps travel as ISO 8601 strings with microseconds (see db/timestamps.ts), never as Date. */
export type Timestamp = ColumnType<string, string | undefined, string>;
type Json<T = Record<string, unknown>> = ColumnType<T, string | T | undefined, string | T>;
type TextArray = ColumnType<string[], string[] | undefined, string[]>;

export interface BusinessesTable {
  id: string;
  name: string;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  business_id: string;
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  created_at: Timestamp;
  revoked_at: Timestamp | null;
}

export interface UsersTable {
  business_id: string;
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  created_at: Timestamp;
}

export interface TeamsTable {
  business_id: string;
  id: string;
  name: string;
  created_at: Timestamp;
}

export interface ContactFieldsTable {
  business_id: string;
  id: string;
  key: string;
  name: string;
  created_at: Timestamp;
}

export interface ContactsTable {
  business_id: string;
  id: string;
  first_name: Generated<string>;
  last_name: Generated<string>;
  email: string | null;
  phone_number: string | null;
  /** Country-variant-free form of phone_number (see lib/phone.ts); what lookups match on. */
  phone_key: string | null;
  external_id: string | null;
  tags: TextArray;
  custom_fields: Json;
  collected_data: Json;
  avatar_url: string | null;
  source: string | null;
  assigned_user_id: string | null;
  is_test: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ContactAliasesTable {
  business_id: string;
  kind: 'email' | 'phone';
  /** Lower-cased email, or phone key. */
  value: string;
  contact_id: string;
  created_at: Timestamp;
}

export interface ConversationsTable {
  business_id: string;
  id: string;
  contact_id: string;
  channel: string;
  channel_id: string | null;
  created_at: Timestamp;
  last_message_at: Timestamp | null;
  message_count: Generated<number>;
  closed_at: Timestamp | null;
  /** True while people, not the AI agent, answer the conversation. */
  manual_control: Generated<boolean>;
  assigned_user_id: string | null;
  team_id: string | null;
  agent_id: string | null;
  tags: TextArray;
  is_internal: Generated<boolean>;
  is_group: Generated<boolean>;
}

export interface MessagesTable {
  business_id: string;
  id: string;
  conversation_id: string;
  contact_id: string;
  channel: string;
  direction: 'inbound' | 'outbound';
  sender_type: 'contact' | 'ai_agent' | 'human' | 'api' | 'automation';
  user_id: string | null;
  agent_id: string | null;
  type: Generated<string>;
  text: Generated<string>;
  status: string;
  error: string | null;
  reply_to_id: string | null;
  metadata: Json;
  sender_address: string | null;
  recipient_address: string | null;
  created_at: Timestamp;
}

export interface EventsTable {
  business_id: string;
  id: string;
  type: string;
  conversation_id: string | null;
  contact_id: string;
  channel: string | null;
  actor_type: 'ai_agent' | 'human' | 'api' | 'system';
  agent_id: string | null;
  user_id: string | null;
  data: Json;
  created_at: Timestamp;
}

export interface Database {
  businesses: BusinessesTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  teams: TeamsTable;
  contact_fields: ContactFieldsTable;
  contacts: ContactsTable;
  contact_aliases: ContactAliasesTable;
  conversations: ConversationsTable;
  messages: MessagesTable;
  events: EventsTable;
}
