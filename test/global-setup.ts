import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A file holding a migrated, empty embedded database (helpers/test-app.ts, pgliteSnapshot). */
    pgliteSnapshot: string;
    /** A migrated, empty PostgreSQL database that each file's database is created from; '' when there is none. */
    postgresTemplate: string;
  }
}

/**
 * Creates one migrated, empty embedded database for the whole run and leaves a copy of it in a file:
 * each test file's database starts from that copy (0.4-0.6 s) instead of running initdb and the
 * migrations again (3-6 s on a 2-core machine).
 */
async function pgliteSnapshotFile(): Promise<{ file: string; remove(): Promise<void> }> {
  const database = await openDatabase({ dataDir: 'memory://' });
  await migrateToLatest(database.db);
  const copy = await database.snapshot!();
  await database.close();
  const file = join(tmpdir(), `pglite-migrated-${process.pid}-${Date.now()}.bin`);
  await writeFile(file, Buffer.from(await copy.arrayBuffer()));
  return { file, remove: () => rm(file, { force: true }) };
}

/**
 * On PostgreSQL, a migrated, empty database that each test file's database is copied from
 * (CREATE DATABASE ... TEMPLATE, 0.1-0.3 s) instead of migrating a new schema (0.5-0.6 s). Without
 * the right to create databases, files fall back to a migrated schema each.
 */
async function postgresTemplate(databaseUrl: string): Promise<{ name: string; remove(): Promise<void> }> {
  const name = `suite_${randomBytes(6).toString('hex')}`;
  try {
    await onServer(databaseUrl, (admin) => admin.query(`CREATE DATABASE "${name}"`));
  } catch {
    return { name: '', remove: async () => undefined };
  }
  const remove = () =>
    onServer(databaseUrl, async (admin) => {
      // The files' copies (`${name}_…`) are dropped by the files; these are what a crashed file left.
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`,
        [`${name}_`],
      );
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    });
  try {
    const database = await openDatabase({ databaseUrl: databaseUrlOf(databaseUrl, name), poolSize: 1 });
    await migrateToLatest(database.db);
    await database.close();
  } catch (error) {
    await remove();
    throw error;
  }
  return { name, remove };
}

/** Runs `work` on a connection of its own to the server of `databaseUrl`. */
async function onServer<T>(databaseUrl: string, work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/** `databaseUrl` with its database name replaced by `name`. */
export function databaseUrlOf(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export default async function setup(project: TestProject) {
  const databaseUrl = process.env.TEST_DATABASE_URL;
  const [snapshot, template] = await Promise.all([
    pgliteSnapshotFile(),
    databaseUrl ? postgresTemplate(databaseUrl) : undefined,
  ]);
  project.provide('pgliteSnapshot', snapshot.file);
  project.provide('postgresTemplate', template?.name ?? '');
  return async () => {
    await Promise.all([snapshot.remove(), template?.remove()]);
  };
}
