import { sql, type Kysely } from 'kysely';

/**
 * Tenancy rule: every tenant table has business_id first in its primary key and in every index, so
 * each query of a business is a range of its own and the schema can be sharded by business_id.
 * The two exceptions are named where they stand.
 */
const statements = [
  `CREATE TABLE businesses (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE api_keys (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    name text NOT NULL,
    prefix text NOT NULL,
    key_hash text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    PRIMARY KEY (business_id, id)
  )`,
  // Exception: a request names its business only through its key, so the key hash leads this index.
  `CREATE UNIQUE INDEX api_keys_key_hash ON api_keys (key_hash)`,
  `CREATE TABLE users (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    email text NOT NULL,
    name text NOT NULL,
    password_hash text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id)
  )`,
  `CREATE UNIQUE INDEX users_email ON users (business_id, lower(email))`,
  `CREATE TABLE teams (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id)
  )`,
  `CREATE TABLE contact_fields (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    key text NOT NULL,
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id)
  )`,
  `CREATE UNIQUE INDEX contact_fields_key ON contact_fields (business_id, key)`,
  `CREATE TABLE contacts (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    first_name text NOT NULL DEFAULT '',
    last_name text NOT NULL DEFAULT '',
    email text,
    phone_number text,
    phone_key text,
    external_id text,
    tags text[] NOT NULL DEFAULT '{}',
    custom_fields jsonb NOT NULL DEFAULT '{}',
    collected_data jsonb NOT NULL DEFAULT '{}',
    avatar_url text,
    source text,
    assigned_user_id uuid,
    is_test boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id)
  )`,
  `CREATE INDEX contacts_email ON contacts (business_id, lower(email))`,
  `CREATE INDEX contacts_phone_key ON contacts (business_id, phone_key)`,
  `CREATE UNIQUE INDEX contacts_external_id ON contacts (business_id, external_id)`,
  // Exception: a GIN index cannot lead with a b-tree column without an extension; the business_id
  // condition of every custom-field lookup filters the few rows the containment test returns.
  `CREATE INDEX contacts_custom_fields ON contacts USING gin (custom_fields jsonb_path_ops)`,
  `CREATE TABLE contact_aliases (
    business_id uuid NOT NULL,
    kind text NOT NULL CHECK (kind IN ('email', 'phone')),
    value text NOT NULL,
    contact_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, kind, value, contact_id),
    FOREIGN KEY (business_id, contact_id) REFERENCES contacts (business_id, id) ON DELETE CASCADE
  )`,
  `CREATE INDEX contact_aliases_contact ON contact_aliases (business_id, contact_id)`,
  `CREATE TABLE conversations (
    business_id uuid NOT NULL,
    id uuid NOT NULL,
    contact_id uuid NOT NULL,
    channel text NOT NULL,
    channel_id uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_message_at timestamptz,
    message_count integer NOT NULL DEFAULT 0,
    closed_at timestamptz,
    manual_control boolean NOT NULL DEFAULT false,
    assigned_user_id uuid,
    team_id uuid,
    agent_id uuid,
    tags text[] NOT NULL DEFAULT '{}',
    is_internal boolean NOT NULL DEFAULT false,
    is_group boolean NOT NULL DEFAULT false,
    PRIMARY KEY (business_id, id),
    FOREIGN KEY (business_id, contact_id) REFERENCES contacts (business_id, id) ON DELETE CASCADE
  )`,
  `CREATE INDEX conversations_contact ON conversations (business_id, contact_id, created_at)`,
  `CREATE TABLE messages (
    business_id uuid NOT NULL,
    id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    contact_id uuid NOT NULL,
    channel text NOT NULL,
    direction text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    sender_type text NOT NULL CHECK (sender_type IN ('contact', 'ai_agent', 'human', 'api', 'automation')),
    user_id uuid,
    agent_id uuid,
    type text NOT NULL DEFAULT 'text',
    text text NOT NULL DEFAULT '',
    status text NOT NULL,
    error text,
    reply_to_id uuid,
    metadata jsonb NOT NULL DEFAULT '{}',
    sender_address text,
    recipient_address text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id),
    FOREIGN KEY (business_id, conversation_id) REFERENCES conversations (business_id, id) ON DELETE CASCADE
  )`,
  `CREATE INDEX messages_conversation ON messages (business_id, conversation_id, created_at, id)`,
  `CREATE INDEX messages_contact ON messages (business_id, contact_id, created_at, id)`,
  `CREATE INDEX messages_created ON messages (business_id, created_at, id)`,
  `CREATE TABLE events (
    business_id uuid NOT NULL,
    id uuid NOT NULL,
    type text NOT NULL,
    conversation_id uuid,
    contact_id uuid NOT NULL,
    channel text,
    actor_type text NOT NULL CHECK (actor_type IN ('ai_agent', 'human', 'api', 'system')),
    agent_id uuid,
    user_id uuid,
    data jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id),
    FOREIGN KEY (business_id, contact_id) REFERENCES contacts (business_id, id) ON DELETE CASCADE,
    FOREIGN KEY (business_id, conversation_id) REFERENCES conversations (business_id, id) ON DELETE CASCADE
  )`,
  `CREATE INDEX events_created ON events (business_id, created_at, id)`,
  `CREATE INDEX events_contact ON events (business_id, contact_id, created_at, id)`,
  `CREATE INDEX events_conversation ON events (business_id, conversation_id) WHERE conversation_id IS NOT NULL`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'events',
    'messages',
    'conversations',
    'contact_aliases',
    'contacts',
    'contact_fields',
    'teams',
    'users',
    'api_keys',
    'businesses',
  ]) {
    await sql.raw(`DROP TABLE IF EXISTS ${table} CASCADE`).execute(db);
  }
}
