import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateTo, migrateToLatest } from '../../src/db/migrate.ts';
import { newId } from '../../src/lib/ids.ts';
import { engine } from '../helpers/test-app.ts';

let database: DatabaseHandle;

beforeAll(async () => {
  database = await openDatabase({ dataDir: 'memory://' });
});
afterAll(() => database.close());

// Once, on the embedded engine: the migration's SQL is the same on both.
describe.runIf(engine === 'pglite')('migration 0011 (agents and search)', () => {
  it('keeps the free-form config of agents made before it, as their data, and can be undone', async () => {
    const db = database.db;
    // The schema as it was before 0011.
    await migrateTo(db, '0010-batch-rows');
    const businessId = newId();
    const agentId = newId();
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Old')`.execute(db);
    await sql`INSERT INTO agents (business_id, id, name, config) VALUES (${businessId}, ${agentId}, 'Legacy', ${JSON.stringify({ model: 'small', tone: 'dry' })})`.execute(db);

    await migrateToLatest(db);
    const agent = await db.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirstOrThrow();
    expect(agent).toMatchObject({ name: 'Legacy', type: 'basic', system_prompt: '', model: null, data: { model: 'small', tone: 'dry' }, tools: {}, prompt_config: {} });
    expect(agent.updated_at).toBe(agent.created_at);

    await migrateTo(db, '0010-batch-rows');
    const { rows } = await sql<{ config: unknown }>`SELECT config FROM agents WHERE id = ${agentId}`.execute(db);
    expect(rows[0]!.config).toEqual({ model: 'small', tone: 'dry' });
  });
});
