import { execFile } from 'node:child_process';
import { existsSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';

/*
 * PGlite creates a new data directory by running `initdb` inside the process, in a WebAssembly
 * instance of its own. WebAssembly memory never shrinks, and the memory of that instance stays with
 * the process until V8 happens to collect it: 675 MB two seconds after creating a directory in a
 * bare process, 270 MB after a forced collection, and a service on a new DATA_DIR ran at 920-1 030 MB
 * (docs/PERFORMANCE-CHOICES.md#pglite-memory). So the directory is created by a short-lived child process, and
 * the service only ever opens an initialised one. A worker thread that exits was measured too: it
 * left ~200 MB behind.
 */

const run = promisify(execFile);

// The child loads the same PGlite build as the service (resolved here, so the working directory
// does not matter), creates the directory, closes it cleanly and exits.
const INIT_SCRIPT = `
const { PGlite } = require(process.argv[1]);
PGlite.create(process.argv[2]).then((pg) => pg.close()).catch((err) => { console.error(err); process.exit(1); });
`;

/** True when `dir` holds a PGlite (PostgreSQL) data directory. */
export function isPgliteDataDir(dir: string): boolean {
  return existsSync(`${dir}/PG_VERSION`);
}

/**
 * Makes `dir` a PGlite data directory when it is not one yet, in a child process that then exits.
 * The directory is created under a temporary name and renamed when complete, so a start that is
 * stopped half-way leaves no half-made database behind. Answers whether it created the directory.
 */
export async function initPgliteDataDir(dir: string): Promise<boolean> {
  if (isPgliteDataDir(dir)) return false;
  if (existsSync(dir) && readdirSync(dir).length > 0)
    throw new Error(`${dir} holds files but no database: move them away to start with a new database`);
  const partial = `${dir}.init`;
  try {
    rmSync(partial, { recursive: true, force: true }); // left by a start that was stopped half-way
    const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    await run(process.execPath, ['-e', INIT_SCRIPT, pglite, partial], { maxBuffer: 16 * 1024 * 1024 });
    if (!isPgliteDataDir(partial)) throw new Error(`no PG_VERSION in ${partial}`);
  } catch (err) {
    try {
      rmSync(partial, { recursive: true, force: true });
    } catch {
      // nothing was made there
    }
    const { stderr, message } = err as { stderr?: string; message?: string };
    throw new Error(`creating the embedded database in ${dir} failed: ${stderr?.trim() || message}`, { cause: err });
  }
  if (existsSync(dir)) rmdirSync(dir); // empty (checked above)
  renameSync(partial, dir);
  return true;
}
