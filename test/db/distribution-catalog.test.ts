import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { distributionBreaches, type Placement } from '../helpers/distribution-catalog.ts';
import { engine, postgresTestDatabase, type PostgresTestDatabase } from '../helpers/test-app.ts';

/**
 * The tables that are not distributed by business_id, each with why (docs/SCALING.md#the-citus-plan).
 * Every other table is a tenant table, distributed by business_id and co-located with the others.
 */
const PLACED: Record<string, Placement> = {
  businesses: {
    place: 'reference',
    reason: 'the tenants themselves, written rarely; every tenant table references it and sessions join it',
  },
  channel_accounts: {
    place: 'reference',
    reason: 'a provider account belongs to one channel of all businesses; a notification names only the account',
  },
  domain_event_subscribers: {
    place: 'reference',
    reason: 'the few subscribers and the event types they take, registered at deploy; each event insert joins it',
  },
  dashboard_sessions: {
    place: 'coordinator',
    reason: "a person's sign-in across their businesses: found by its token, switched between businesses",
  },
  dashboard_session_users: {
    place: 'coordinator',
    reason: 'the businesses a sign-in opened, keyed by the session',
  },
  dashboard_sign_in_failures: {
    place: 'coordinator',
    reason: 'sign-in throttling, keyed by the digest of an email or client address before any business is known',
  },
  kysely_migration: { place: 'coordinator', reason: "the migrator's record of what ran (operator only)" },
  kysely_migration_lock: { place: 'coordinator', reason: "the migrator's lock (operator only)" },
};

// The catalog is the same on both engines once migrated; PostgreSQL is the one a cluster runs.
describe.runIf(engine === 'postgres')('the schema, distributed by business_id', () => {
  let target: PostgresTestDatabase;
  let database: DatabaseHandle;
  let schema: string;

  beforeAll(async () => {
    target = await postgresTestDatabase();
    database = await openDatabase({ databaseUrl: target.databaseUrl, schema: target.schema, poolSize: 2 });
    if (target.schema) await migrateToLatest(database.db, target.schema);
    schema = target.schema ?? 'public';
  });
  afterAll(async () => {
    await database?.close();
    await target?.drop();
  });

  it('keeps business_id first in every key and pairs it in every foreign key of the tenant tables', async () => {
    expect(await distributionBreaches(database.db, schema, PLACED)).toEqual([]);
  });

  it('places each table as docs/SCALING.md says', async () => {
    const { rows } = await sql<{ name: string }>`select c.relname as name from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relkind in ('r', 'p') and not c.relispartition`.execute(database.db);
    const tables = new Set(rows.map((r) => r.name));
    const plan = readFileSync(join(import.meta.dirname, '../../docs/SCALING.md'), 'utf8');
    /** The tables named in the plan's text from `start` to `end`, in backquotes. */
    const named = (start: string, end: string) => {
      const from = plan.indexOf(start);
      const text = plan.slice(from, plan.indexOf(end, from + start.length));
      return [...new Set([...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).filter((t) => tables.has(t)))].sort();
    };
    const placed = (place: Placement['place']) =>
      Object.keys(PLACED)
        .filter((t) => PLACED[t].place === place)
        .sort();
    expect(named('**Distributed by', '\n\n')).toEqual([...tables].filter((t) => !(t in PLACED)).sort());
    expect(named('**Reference tables**', '**Kept on the coordinator only**')).toEqual(placed('reference'));
    expect(named('**Kept on the coordinator only**', '###')).toEqual(placed('coordinator'));
  });

  it('reports each breach of a table that does not keep the rule', async () => {
    const scratch = `distribution_${randomBytes(6).toString('hex')}`;
    const db = database.db;
    const run = (statement: string) => sql.raw(statement).execute(db);
    try {
      await run(`CREATE SCHEMA ${scratch}`);
      await run(`CREATE TABLE ${scratch}.tenants (id uuid PRIMARY KEY)`);
      await run(`CREATE TABLE ${scratch}.sessions (id uuid PRIMARY KEY)`);
      await run(`CREATE TABLE ${scratch}.orders (
        business_id uuid NOT NULL REFERENCES ${scratch}.tenants (id),
        id uuid NOT NULL,
        code text NOT NULL,
        PRIMARY KEY (business_id, id),
        UNIQUE (business_id, code)
      )`);
      // Every rule broken once: an id-only key, a unique index led by another column, a foreign key
      // by id alone, one to a table kept on the coordinator, a table without business_id, a keyless one.
      await run(`CREATE TABLE ${scratch}.lines (
        business_id uuid NOT NULL,
        id uuid PRIMARY KEY,
        order_id uuid NOT NULL,
        session_id uuid REFERENCES ${scratch}.sessions (id),
        sku text NOT NULL,
        FOREIGN KEY (business_id, order_id) REFERENCES ${scratch}.orders (business_id, id)
      )`);
      await run(`CREATE UNIQUE INDEX lines_sku ON ${scratch}.lines (sku, business_id)`);
      await run(`CREATE UNIQUE INDEX lines_lower_sku ON ${scratch}.lines (lower(sku))`);
      await run(`CREATE TABLE ${scratch}.notes (business_id uuid NOT NULL, body text)`);
      await run(`CREATE TABLE ${scratch}.loose_orders (
        business_id uuid NOT NULL,
        order_business_id uuid NOT NULL,
        order_id uuid NOT NULL,
        PRIMARY KEY (business_id, order_id),
        FOREIGN KEY (order_business_id, order_id) REFERENCES ${scratch}.orders (business_id, id)
      )`);
      await run(`CREATE TABLE ${scratch}.settings (name text PRIMARY KEY)`);

      const placed: Record<string, Placement> = {
        tenants: { place: 'reference', reason: 'the tenants' },
        sessions: { place: 'coordinator', reason: 'sign-ins' },
        gone: { place: 'reference', reason: 'dropped since' },
      };
      expect(await distributionBreaches(db, scratch, placed)).toEqual([
        'gone is listed as reference but does not exist',
        'settings has no business_id and is not listed as a reference or coordinator table',
        'notes has no primary key',
        'lines: unique index lines_lower_sku does not lead with business_id',
        'lines: unique index lines_pkey does not lead with business_id',
        'lines: unique index lines_sku does not lead with business_id',
        'lines: foreign key lines_session_id_fkey references sessions, which is not a reference table',
        'loose_orders: foreign key loose_orders_order_business_id_order_id_fkey to orders does not pair business_id with business_id',
      ]);

      // Mended, the same tables pass.
      await run(`DROP TABLE ${scratch}.lines, ${scratch}.notes, ${scratch}.loose_orders, ${scratch}.settings`);
      await run(`CREATE TABLE ${scratch}.lines (
        business_id uuid NOT NULL,
        id uuid NOT NULL,
        order_id uuid NOT NULL,
        sku text NOT NULL,
        PRIMARY KEY (business_id, id),
        FOREIGN KEY (business_id, order_id) REFERENCES ${scratch}.orders (business_id, id)
      )`);
      await run(`CREATE UNIQUE INDEX lines_sku ON ${scratch}.lines (business_id, sku) WHERE sku <> ''`);
      const { gone: _gone, ...present } = placed;
      expect(await distributionBreaches(db, scratch, present)).toEqual([]);
    } finally {
      await run(`DROP SCHEMA IF EXISTS ${scratch} CASCADE`);
    }
  });
});
