import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { AGENT_JSON_FIELDS, type AgentJsonField } from './agents.schemas.ts';

const columns = [
  'id',
  'name',
  'type',
  'system_prompt',
  'model',
  ...AGENT_JSON_FIELDS,
  'created_at',
  'updated_at',
] as const;

/**
 * Every setting of an agent: its scalar settings, and its JSON fields as objects. Writes take them
 * all, changed or not, so an agent is written by one statement whatever a request sends.
 */
export type AgentValues = { name: string; type: string; system_prompt: string; model: string | null } & {
  [K in AgentJsonField]: Record<string, unknown>;
};

/** The JSON fields serialised for the driver (PGlite and node-postgres take jsonb as text). */
function serialised(values: AgentValues) {
  const row: Record<string, unknown> = { ...values };
  for (const field of AGENT_JSON_FIELDS) row[field] = JSON.stringify(values[field]);
  return row;
}

export const agentsRepository = {
  insert(db: Db, businessId: string, id: string, values: AgentValues) {
    return db
      .insertInto('agents')
      .values({ ...serialised(values), name: values.name, id, business_id: businessId })
      .returning(columns)
      .executeTakeFirstOrThrow();
  },

  /** The agents of a business, oldest first, without their configuration. */
  list(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('agents')
      .select(['id', 'name', 'type', 'model', 'activation_rules', 'created_at', 'updated_at'])
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  find(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('agents')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** find, locking the row until the transaction ends (a partial update reads, merges, writes). */
  findForUpdate(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('agents')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
  },

  update(db: Db, businessId: string, id: string, values: AgentValues) {
    return db
      .updateTable('agents')
      .set({ ...serialised(values), updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirstOrThrow();
  },
};
