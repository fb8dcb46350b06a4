import { sql, type Kysely } from 'kysely';

/**
 * An agent's configuration as the contract reads and updates it (GET/PATCH /agents/:agent_id), and
 * the search collections with their items (POST /search/item).
 *
 * Agents had one free-form `config` object; it becomes the agent's `data`, the free-form part of
 * the configuration, so nothing an operator stored is lost.
 */
const statements = [
  `ALTER TABLE agents
    ADD COLUMN system_prompt text NOT NULL DEFAULT '',
    ADD COLUMN model text,
    ADD COLUMN prompt_config jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN tools jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN data jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN activation_rules jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN follow_up_settings jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN inactivity_run_settings jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()`,
  `UPDATE agents SET data = config, updated_at = created_at`,
  `ALTER TABLE agents DROP COLUMN config`,
  `CREATE TABLE search_collections (
    business_id uuid NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    name text NOT NULL,
    embedding_fields jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id),
    UNIQUE (business_id, name)
  )`,
  `CREATE TABLE search_items (
    business_id uuid NOT NULL,
    collection_id uuid NOT NULL,
    id uuid NOT NULL,
    external_id text NOT NULL,
    payload jsonb NOT NULL,
    embedding_json jsonb NOT NULL,
    is_active boolean NOT NULL,
    source text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, id),
    UNIQUE (business_id, collection_id, external_id),
    FOREIGN KEY (business_id, collection_id) REFERENCES search_collections (business_id, id) ON DELETE CASCADE
  )`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP TABLE IF EXISTS search_items',
    'DROP TABLE IF EXISTS search_collections',
    `ALTER TABLE agents ADD COLUMN config jsonb NOT NULL DEFAULT '{}'`,
    'UPDATE agents SET config = data',
    `ALTER TABLE agents DROP COLUMN system_prompt, DROP COLUMN model, DROP COLUMN prompt_config, DROP COLUMN tools,
      DROP COLUMN data, DROP COLUMN activation_rules, DROP COLUMN follow_up_settings, DROP COLUMN inactivity_run_settings,
      DROP COLUMN updated_at`,
  ]) {
    await sql.raw(statement).execute(db);
  }
}
