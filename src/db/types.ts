import type { ColumnType, Generated } from 'kysely';

/** Timestamps travel as ISO 8601 strings with microseconds (see db/timestamps.ts), never as Date. */
export type Timestamp = ColumnType<string, string | undefined, string>;
type Json<T = Record<string, unknown>> = ColumnType<T, string | T | undefined, string | T>;
type TextArray = ColumnType<string[], string[] | undefined, string[]>;

export interface BusinessesTable {
  id: string;
  name: string;
  created_at: Timestamp;
  /** Tokens the business's AI agents may use per UTC day; null: AI_DAILY_TOKEN_BUDGET, 0: no bound. */
  ai_daily_token_budget: number | null;
  /** IANA zone the reports count days and hours in. */
  time_zone: Generated<string>;
}

export interface ApiKeysTable {
  business_id: string;
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  created_at: Timestamp;
  revoked_at: Timestamp | null;
  /** Written at most once a minute per key and process. */
  last_used_at: Timestamp | null;
}

export interface UsersTable {
  business_id: string;
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  role: Generated<UserRole>;
  /** When the user last signed in or switched to this business: where their next sign-in lands. */
  last_active_at: Timestamp | null;
  /** Set when removed: the row stays so the history it wrote still names it. */
  deleted_at: Timestamp | null;
  created_at: Timestamp;
}

export type UserRole = 'owner' | 'admin' | 'agent';

export interface DashboardSessionsTable {
  id: string;
  /** SHA-256 of the cookie's token, hex. */
  token_hash: string;
  business_id: string;
  user_id: string;
  csrf_token: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  ip: string | null;
  user_agent: string | null;
}

/** The businesses a session's sign-in opened, and its user in each. */
export interface DashboardSessionUsersTable {
  session_id: string;
  business_id: string;
  user_id: string;
}

export interface DashboardInvitationsTable {
  business_id: string;
  id: string;
  user_id: string;
  /** SHA-256 of the invitation token, hex. */
  token_hash: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  accepted_at: Timestamp | null;
}

export interface DashboardSignInFailuresTable {
  /** SHA-256 of the throttled key (an email, a client address), hex. */
  key: string;
  failures: number;
  last_failure_at: Timestamp;
}

export interface TeamsTable {
  business_id: string;
  id: string;
  name: string;
  created_at: Timestamp;
}

export interface TeamMembersTable {
  business_id: string;
  team_id: string;
  user_id: string;
  created_at: Generated<Timestamp>;
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
  /**
   * Set when a merge hid this contact into its survivor: every reader treats it as gone while its
   * messages and events move to the survivor, and the move deletes it at its end.
   */
  merged_into: string | null;
}

export interface ContactAliasesTable {
  business_id: string;
  kind: 'email' | 'phone';
  /** Lower-cased email, or phone key. */
  value: string;
  contact_id: string;
  created_at: Timestamp;
}

/**
 * The contact each address names (src/modules/contacts/contact-identity.ts), written by the contacts
 * repository in the statements that write contacts and their aliases (migration 0019).
 */
export interface ContactIdentitiesTable {
  business_id: string;
  /** An address kind (channels/addresses.ts). */
  kind: string;
  /** The address's lookup key: a phone key, a lower-cased email, a page-scoped id... */
  value: string;
  contact_id: string;
  /** The contact's created_at: the oldest holder of an address is the one it names. */
  contact_created_at: Timestamp;
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
  /** Manual control pinned: the AI does not return on its own (migration 0005). */
  manual_control_locked: Generated<boolean>;
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
  channel_id?: string | null;
  provider_message_id?: string | null;
  template_id?: string | null;
  status_at?: Timestamp | null;
  /** The provider-neutral content the send worker delivers (outbound API sends). */
  outbound_content?: Json<unknown> | null;
  /** Set while a provider call may be in flight; an abandoned send with it set is never resent. */
  provider_call_at?: Timestamp | null;
  send_attempts: Generated<number>;
  /** Rule 4 of the export (test contact, internal chat, group); kept by a trigger (migration 0005). */
  excluded: Generated<boolean>;
  /** Rule 5: a web-client copy of a Cloud API message of the same number; kept by a trigger. */
  duplicate: Generated<boolean>;
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
  /** Left out of GET /events (rule 4, internal platform types); kept by a trigger (migration 0005). */
  excluded: Generated<boolean>;
  created_at: Timestamp;
}

/** A user's read position in a conversation (migration 0022): the last message the user has seen. */
export interface ConversationReadsTable {
  business_id: string;
  user_id: string;
  conversation_id: string;
  last_read_message_id: string;
  /** That message's created_at: with its id, the position later messages are counted from. */
  last_read_message_at: Timestamp;
  read_at: Timestamp;
}

export interface RateLimitCountersTable {
  business_id: string;
  bucket: string;
  window_start: Timestamp;
  hits: number;
}

export interface ChannelPacesTable {
  business_id: string;
  channel_id: string;
  next_at: Timestamp;
  granted: boolean;
}

export interface ChannelsTable {
  business_id: string;
  id: string;
  type: string;
  name: string;
  identifier: string;
  provider_kind: string | null;
  /** The provider's id of the account (WhatsApp: phone_number_id); how notifications find the channel. */
  provider_account: string | null;
  provider_config: Json;
  pace_per_second: Generated<number>;
  /** The AI agent every new conversation of the channel gets (migration 0031); null: none. */
  agent_id: string | null;
  /** When the provider last refused the channel's credentials (migration 0036); null: none refused since set. */
  credentials_rejected_at?: Timestamp | null;
  created_at: Timestamp;
}

export interface TemplatesTable {
  business_id: string;
  id: string;
  channel_id: string | null;
  name: string;
  language: string;
  category: string | null;
  body: string;
  header: string | null;
  footer: string | null;
  buttons: Json<unknown[]>;
  variables: Json<string[]>;
  created_at: Timestamp;
}

export interface OutboxTable {
  business_id: string;
  id: string;
  /** What the work is: 'send', 'media_fetch', ... */
  kind: string;
  /** The record the work is about (a message id). */
  ref_id: string;
  state: Generated<'pending' | 'running' | 'done' | 'failed'>;
  attempts: Generated<number>;
  run_at: Timestamp;
  locked_until: Timestamp | null;
  /** The worker session that claimed it, while running (src/jobs/worker-session.ts); null: its lease alone. */
  locked_by: number | null;
  last_error: string | null;
  created_at: Timestamp;
}

export interface IdempotencyKeysTable {
  business_id: string;
  route: string;
  key: string;
  request_hash: string;
  status_code: number | null;
  response: Json<unknown> | null;
  created_at: Timestamp;
  /** The claim that holds the key (null on rows from before leases). */
  lease_id: string | null;
}

export interface MediaTable {
  business_id: string;
  id: Generated<number>;
  message_id: string;
  provider_media_id: string | null;
  content_type: string | null;
  filename: string | null;
  sha256: string | null;
  size_bytes: number | null;
  storage_key: string | null;
  source_url: string | null;
  created_at: Timestamp;
}

export interface AgentsTable {
  business_id: string;
  id: string;
  name: string;
  type: Generated<string>;
  system_prompt: Generated<string>;
  model: string | null;
  prompt_config: Json;
  tools: Json;
  data: Json;
  activation_rules: Json;
  follow_up_settings: Json;
  inactivity_run_settings: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** One run of a conversation's AI agent (src/modules/ai): what it read, called, sent and why it ended. */
export interface AiRunsTable {
  business_id: string;
  id: string;
  conversation_id: string;
  agent_id: string;
  /** What the run is for: an answer, a follow-up after a silence, or a sentiment (migration 0033). */
  kind: Generated<'reply' | 'follow_up' | 'sentiment'>;
  /**
   * The message the run is for, unique per conversation and kind: the newest inbound message a reply
   * answers, the agent's message a follow-up follows, the newest message a sentiment covers.
   */
  trigger_message_id: string;
  input_message_ids: Generated<string[]>;
  status: Generated<
    | 'running'
    | 'replied'
    | 'skipped'
    | 'superseded'
    | 'handed_over'
    | 'resolved'
    | 'transferred'
    | 'analyzed'
    | 'failed'
  >;
  outcome: string | null;
  model_calls: Json<unknown[]>;
  tool_calls: Json<unknown[]>;
  reply_text: string | null;
  reply_message_id: string | null;
  bot_status: string | null;
  attempts: Generated<number>;
  error: string | null;
  created_at: Timestamp;
  finished_at: Timestamp | null;
}

export interface SearchCollectionsTable {
  business_id: string;
  id: string;
  name: string;
  embedding_fields: Json<string[]>;
  created_at: Timestamp;
}

export interface SearchItemsTable {
  business_id: string;
  collection_id: string;
  id: string;
  external_id: string;
  payload: Json;
  embedding_json: Json;
  is_active: boolean;
  source: string;
  embedding: ColumnType<number[] | null, number[] | null | undefined, number[] | null>;
  embedding_model: string | null;
  embedded_at: Timestamp | null;
  embedding_queued_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhooksTable {
  business_id: string;
  id: string;
  event: string;
  url: string;
  method: 'POST' | 'PUT';
  /** Names as given; values sealed (webhook-header-secrets.ts), or plain text while `headers_sealed` is false. */
  headers: Json<Record<string, string>>;
  /** False for values stored before sealing, until the start-up pass seals them; written as true. */
  headers_sealed: boolean;
  /** `whsec_<base64>`; shown once at creation or rotation. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Timestamp | null;
  enabled: Generated<boolean>;
  disabled_reason: string | null;
  disabled_at: Timestamp | null;
  first_failure_at: Timestamp | null;
  last_success_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  business_id: string;
  /** Also the webhook-id header. */
  id: string;
  webhook_id: string;
  seq: Generated<number>;
  event: string;
  message_id: string | null;
  conversation_id: string | null;
  payload: Json;
  state: Generated<'pending' | 'running' | 'delivered' | 'failed'>;
  attempts: Generated<number>;
  schedule_base: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: Timestamp | null;
  /** The worker session it was claimed under (migration 0051; worker-session.ts); null: none. */
  locked_by?: number | null;
  last_error: string | null;
  /** Queued behind an earlier pending or running delivery of the same webhook and conversation. */
  held: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookAttemptsTable {
  business_id: string;
  id: string;
  webhook_id: string;
  delivery_id: string;
  message_id: string | null;
  attempt: number;
  status_code: number | null;
  ok: boolean;
  error: string | null;
  duration_ms: number;
  response_body: string | null;
  created_at: Timestamp;
}

/** A domain event (src/modules/domain-events), written with its cause and handed to subscribers after the commit. */
export interface DomainEventsTable {
  id: Generated<number>;
  business_id: string;
  type: string;
  conversation_id: string | null;
  /** The message, conversation or contact the event is about. */
  subject_id: string;
  data: Json;
  created_at: Timestamp;
}

export interface DomainEventSubscribersTable {
  name: string;
  types: TextArray;
  created_at: Timestamp;
}

/** An event not yet handed to a subscriber: the subscriber's position. */
export interface DomainEventPendingTable {
  business_id: string;
  subscriber: string;
  event_id: number;
}

/** A business's tokens of one UTC day (migration 0035), added to as model calls are recorded. */
/** Where a polled channel's reading stands, and which process reads it (migration 0037). */
export interface InboundCursorsTable {
  business_id: string;
  channel_id: string;
  cursor: Json<Record<string, unknown>> | null;
  holder: string | null;
  held_until: Timestamp | null;
  updated_at: Generated<Timestamp>;
}

/** A channel linked as a device: its state as the dashboard shows it, and what the operator asked (migration 0042). */
export interface ChannelLinksTable {
  business_id: string;
  channel_id: string;
  state: Generated<string>;
  qr: string | null;
  pairing_code: string | null;
  pairing_phone: string | null;
  requested: Generated<boolean>;
  account: string | null;
  updated_at: Timestamp;
}

/** A linked channel's credentials and keys, one sealed value per key (migration 0042). */
export interface ChannelLinkKeysTable {
  business_id: string;
  channel_id: string;
  key: string;
  value: string;
}

/** The channel holding each provider account, across businesses (migration 0045). */
export interface ChannelAccountsTable {
  provider_kind: string;
  provider_account: string;
  business_id: string;
  channel_id: string;
}

export interface AiTokenUsageTable {
  business_id: string;
  day: string;
  /** bigint: text from PostgreSQL, a number from PGlite. */
  tokens: string | number;
}

export interface Database {
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  agents: AgentsTable;
  search_collections: SearchCollectionsTable;
  search_items: SearchItemsTable;
  channels: ChannelsTable;
  templates: TemplatesTable;
  outbox: OutboxTable;
  ai_runs: AiRunsTable;
  ai_token_usage: AiTokenUsageTable;
  inbound_cursors: InboundCursorsTable;
  channel_links: ChannelLinksTable;
  channel_link_keys: ChannelLinkKeysTable;
  channel_accounts: ChannelAccountsTable;
  idempotency_keys: IdempotencyKeysTable;
  media: MediaTable;
  businesses: BusinessesTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  dashboard_sessions: DashboardSessionsTable;
  dashboard_session_users: DashboardSessionUsersTable;
  dashboard_invitations: DashboardInvitationsTable;
  dashboard_sign_in_failures: DashboardSignInFailuresTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  contact_fields: ContactFieldsTable;
  contacts: ContactsTable;
  contact_aliases: ContactAliasesTable;
  contact_identities: ContactIdentitiesTable;
  conversations: ConversationsTable;
  messages: MessagesTable;
  events: EventsTable;
  conversation_reads: ConversationReadsTable;
  rate_limit_counters: RateLimitCountersTable;
  channel_paces: ChannelPacesTable;
  domain_events: DomainEventsTable;
  domain_event_subscribers: DomainEventSubscribersTable;
  domain_event_pending: DomainEventPendingTable;
}
