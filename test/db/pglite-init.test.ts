import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/db/database.ts';
import { initPgliteDataDir, isPgliteDataDir } from '../../src/db/pglite-init.ts';

// Creating a database in WebAssembly takes a core for seconds; on a busy CI machine, far more than the default.
vi.setConfig({ testTimeout: 120_000 });

// The embedded engine's data directory on disk; the PostgreSQL project has nothing to add here.
describe.skipIf(process.env.TEST_ENGINE === 'postgres')('embedded database on disk', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'pglite-init-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('creates the data directory in a child process, under a temporary name, once', async () => {
    const dir = join(root, 'a', 'pglite');
    mkdirSync(join(root, 'a'));
    expect(await initPgliteDataDir(dir)).toBe(true);
    expect(isPgliteDataDir(dir)).toBe(true);
    expect(readdirSync(join(root, 'a'))).toEqual(['pglite']); // no `pglite.init` left behind
    expect(await initPgliteDataDir(dir)).toBe(false);
  });

  it('opens a new DATA_DIR, keeps what was stored across a restart, with small buffers', async () => {
    const dataDir = join(root, 'b');
    const first = await openDatabase({ dataDir });
    await sql`CREATE TABLE kept (id int PRIMARY KEY)`.execute(first.db);
    await sql`INSERT INTO kept VALUES (1), (2)`.execute(first.db);
    const buffers = await sql<{ v: string }>`SELECT current_setting('shared_buffers') AS v`.execute(first.db);
    expect(buffers.rows[0].v).toBe('16MB');
    await first.close();

    const second = await openDatabase({ dataDir });
    const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM kept`.execute(second.db);
    expect(rows.rows[0].n).toBe(2);
    await second.close();
  });

  it('refuses a directory that holds other files, and leaves them alone', async () => {
    const dir = join(root, 'c', 'pglite');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    await expect(initPgliteDataDir(dir)).rejects.toThrow(/holds files but no database/);
    expect(readdirSync(dir)).toEqual(['notes.txt']);
  });

  it('reports a failed creation and leaves nothing half-made', async () => {
    writeFileSync(join(root, 'file'), '');
    const dir = join(root, 'file', 'pglite'); // its parent is a file: the child cannot create it
    await expect(initPgliteDataDir(dir)).rejects.toThrow(/creating the embedded database/);
    expect(existsSync(`${dir}.init`)).toBe(false);
  });

  it('a process that opens a new DATA_DIR stays small: the creation does not stay in its memory', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/db/pglite-open.probe.ts', join(root, 'd')],
      { cwd: process.cwd() },
    );
    const probe = JSON.parse(stdout) as { rssMb: number; settings: Record<string, string> };
    expect(probe.settings.shared_buffers).toBe('16MB');
    // Measured: 250-260 MB; creating the directory in the same process left it at 730-800 MB.
    expect(probe.rssMb).toBeLessThan(450);
  });
});
