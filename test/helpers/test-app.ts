import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { openDatabase, type DatabaseHandle, type Engine } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { LiveOptions } from '../../src/modules/live/live.hub.ts';
import type { Clock } from '../../src/lib/clock.ts';
import { databaseUrlOf } from '../global-setup.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const PUBLIC_URL = 'http://dashboard.test';

/** The engine this test project runs on (vitest.config.ts sets TEST_ENGINE per project). */
export const engine: Engine = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'pglite';

export interface TestApp {
  app: FastifyInstance;
  database: DatabaseHandle;
  config: Config;
  /** Where the PostgreSQL database is, for another process to open it (none on the embedded engine). */
  postgres?: { databaseUrl: string; schema?: string };
  close(): Promise<void>;
}

let snapshot: Promise<Blob> | undefined;

/**
 * The migrated, empty embedded database that test/global-setup.ts left for this run, which an
 * in-memory database starts from; none outside vitest (benchmarks that build test apps). Read once
 * per worker: files that share a worker share the copy.
 */
export async function pgliteSnapshot(): Promise<Blob | undefined> {
  if (!process.env.VITEST) return undefined;
  const { inject } = await import('vitest');
  const file = inject('pgliteSnapshot');
  if (!file) return undefined;
  snapshot ??= readFile(file).then((bytes) => new Blob([bytes]));
  return snapshot;
}

/** The configuration every test app runs with, plus `env`. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: 'memory://',
    ADMIN_TOKEN,
    PUBLIC_URL,
    SECRET_KEY: 'test-secret-key-0123456789-0123456789',
    ...env,
  });
}

/** A new, empty, migrated PostgreSQL database for one test file (or for the apps of one test). */
export interface PostgresTestDatabase {
  /** Where to connect, and the schema to work in (none: public). */
  databaseUrl: string;
  schema?: string;
  /** Drops it; its connections are closed first. */
  drop(): Promise<void>;
}

/**
 * A copy of the run's migrated template (test/global-setup.ts), or, where the run could not create
 * one, a new schema of TEST_DATABASE_URL, which the caller migrates (migrateToLatest).
 */
export async function postgresTestDatabase(): Promise<PostgresTestDatabase> {
  const databaseUrl = process.env.TEST_DATABASE_URL;
  if (!databaseUrl) throw new Error('TEST_DATABASE_URL is required for the postgres projects');
  const template = process.env.VITEST ? (await import('vitest')).inject('postgresTemplate') : '';
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  if (template) {
    const name = `${template}_${randomBytes(6).toString('hex')}`;
    await admin(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    return {
      databaseUrl: databaseUrlOf(databaseUrl, name),
      drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
    };
  }
  const schema = `test_${randomBytes(6).toString('hex')}`;
  return { databaseUrl, schema, drop: () => admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`) };
}

/**
 * The real app over a real, empty database of the current engine: a fresh in-memory PGlite, or a
 * fresh PostgreSQL database (postgresTestDatabase) that is dropped afterwards. `workers: false`
 * leaves the background workers (outbox, webhooks, statistics) stopped, for a test that drives one
 * itself. `clock` is where the app reads time (sessions, throttling, webhook schedules).
 */
export async function buildTestApp(
  env: Record<string, string> = {},
  options: { workers?: boolean; clock?: Clock; live?: LiveOptions } = {},
): Promise<TestApp> {
  const postgres = engine === 'postgres' ? await postgresTestDatabase() : undefined;
  const config = testConfig(env);
  const snapshot = postgres ? undefined : await pgliteSnapshot();
  const database = await openDatabase({
    databaseUrl: postgres?.databaseUrl,
    dataDir: 'memory://',
    schema: postgres?.schema,
    poolSize: 5,
    snapshot,
  });
  // A copy of the run's migrated database needs no migrations (checking costs 0.05-0.3 s a file).
  if (postgres ? postgres.schema : !snapshot) await migrateToLatest(database.db, postgres?.schema);
  const app = await buildApp(config, {
    database,
    logger: false,
    workers: options.workers,
    clock: options.clock,
    live: options.live,
  });
  await app.ready();
  return {
    app,
    database,
    config,
    postgres: postgres && { databaseUrl: postgres.databaseUrl, schema: postgres.schema },
    async close() {
      await app.close();
      await database.close();
      await postgres?.drop();
    },
  };
}
