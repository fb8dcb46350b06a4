import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { openDatabase, type DatabaseHandle, type Engine } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const PUBLIC_URL = 'http://dashboard.test';

/** The engine this test project runs on (vitest.config.ts sets TEST_ENGINE per project). */
export const engine: Engine = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'pglite';

export interface TestApp {
  app: FastifyInstance;
  database: DatabaseHandle;
  config: Config;
  close(): Promise<void>;
}

let snapshot: Promise<Blob> | undefined;

/**
 * The migrated, empty embedded database that test/global-setup.ts left for this run, which an
 * in-memory database starts from; none on the PostgreSQL project, nor outside vitest (benchmarks
 * that build test apps).
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

/**
 * The real app over a real, empty database of the current engine: a fresh in-memory PGlite, or a
 * fresh schema of TEST_DATABASE_URL that is dropped afterwards. `workers: false` leaves the
 * background workers (outbox, webhooks, statistics) stopped, for a test that drives one itself.
 */
export async function buildTestApp(
  env: Record<string, string> = {},
  options: { workers?: boolean } = {},
): Promise<TestApp> {
  const databaseUrl = engine === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
  if (engine === 'postgres' && !databaseUrl) throw new Error('TEST_DATABASE_URL is required for the postgres project');
  const schema = databaseUrl ? `test_${randomBytes(6).toString('hex')}` : undefined;
  const config = testConfig(env);
  const database = await openDatabase({
    databaseUrl,
    dataDir: 'memory://',
    schema,
    poolSize: 5,
    snapshot: await pgliteSnapshot(),
  });
  await migrateToLatest(database.db, schema);
  const app = await buildApp(config, { database, logger: false, workers: options.workers });
  await app.ready();
  return {
    app,
    database,
    config,
    async close() {
      await app.close();
      await database.close();
      if (schema && databaseUrl) {
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await client.end();
      }
    },
  };
}
