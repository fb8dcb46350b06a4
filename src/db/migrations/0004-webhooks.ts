import { sql, type Kysely } from 'kysely';

/** Outbound webhooks: registrations, deliveries (their own outbox) and the attempt log. */
const statements = [
  `CREATE TABLE webhooks (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    event text NOT NULL,
    url text NOT NULL,
    method text NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'PUT')),
    headers jsonb NOT NULL DEFAULT '{}',
    secret text NOT NULL,
    -- After a rotation the old secret keeps signing (next to the new one) until it expires.
    previous_secret text,
    previous_secret_expires_at timestamptz,
    enabled boolean NOT NULL DEFAULT true,
    disabled_reason text,
    disabled_at timestamptz,
    -- Start of the current run of failures (null after a success): what the 5-day rule measures.
    first_failure_at timestamptz,
    last_success_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id)
  )`,
  `CREATE INDEX webhooks_event ON webhooks (business_id, event) WHERE enabled`,
  `CREATE TABLE webhook_deliveries (
    business_id uuid NOT NULL,
    -- Also the webhook-id header: the same on every attempt, the receiver's idempotency key.
    id uuid NOT NULL,
    webhook_id uuid NOT NULL,
    -- Creation order; deliveries of one conversation go out in this order.
    seq bigint GENERATED ALWAYS AS IDENTITY,
    event text NOT NULL,
    message_id uuid,
    conversation_id uuid,
    payload jsonb NOT NULL,
    state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'delivered', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    -- attempts at the start of the current retry schedule (a manual redelivery starts a new one).
    schedule_base integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    locked_until timestamptz,
    last_error text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (business_id, id),
    FOREIGN KEY (business_id, webhook_id) REFERENCES webhooks (business_id, id) ON DELETE CASCADE
  )`,
  // Exception to business_id first: workers look for due work across all businesses.
  `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`,
  `CREATE INDEX webhook_deliveries_running ON webhook_deliveries (locked_until) WHERE state = 'running'`,
  `CREATE INDEX webhook_deliveries_order ON webhook_deliveries (business_id, webhook_id, conversation_id, seq)
    WHERE state IN ('pending', 'running')`,
  `CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at)`,
  `CREATE TABLE webhook_attempts (
    business_id uuid NOT NULL,
    id uuid NOT NULL,
    webhook_id uuid NOT NULL,
    delivery_id uuid NOT NULL,
    message_id uuid,
    attempt integer NOT NULL,
    status_code integer,
    ok boolean NOT NULL,
    error text,
    duration_ms integer NOT NULL,
    response_body text,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (business_id, id),
    FOREIGN KEY (business_id, webhook_id) REFERENCES webhooks (business_id, id) ON DELETE CASCADE
  )`,
  `CREATE INDEX webhook_attempts_log ON webhook_attempts (business_id, webhook_id, created_at DESC, id DESC)`,
  `CREATE INDEX webhook_attempts_created ON webhook_attempts (created_at)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP TABLE IF EXISTS webhook_attempts',
    'DROP TABLE IF EXISTS webhook_deliveries',
    'DROP TABLE IF EXISTS webhooks',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
