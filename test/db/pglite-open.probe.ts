/**
 * Opens the embedded database in DATA_DIR as the service does, runs a query and prints the process's
 * resident memory and the engine's buffer settings as JSON (read by pglite-init.test.ts, which runs
 * it in a process of its own so that nothing else counts in the figure).
 */
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';

const database = await openDatabase({ dataDir: process.argv[2] });
const settings = await sql<{ name: string; value: string }>`
  SELECT name, current_setting(name) AS value FROM pg_settings WHERE name IN ('shared_buffers', 'max_connections')`.execute(
  database.db,
);
const rssMb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;
process.stdout.write(
  JSON.stringify({ rssMb, settings: Object.fromEntries(settings.rows.map((r) => [r.name, r.value])) }),
);
await database.close();
