import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { request } from 'undici';

export type Engine = 'postgres' | 'pglite';

/** Where a benchmark's service keeps its data: a fresh PostgreSQL database or a fresh PGlite dir. */
export interface Storage {
  engine: Engine;
  env: Record<string, string>;
  dispose(): Promise<void>;
}

export const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const SECRET_KEY = 'bench-secret-key-0123456789abcdefghijklmnopqrstuvwxyz';
const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Fresh storage for one run: PostgreSQL gets its database dropped and created anew (the server is
 * PG_URL, default the local one), PGlite a new directory under /tmp, removed afterwards.
 */
export async function freshStorage(engine: Engine, name = 'bench'): Promise<Storage> {
  if (engine === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), `${name}-pglite-`));
    return { engine, env: { DATA_DIR: dir }, dispose: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const server = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
  const admin = new pg.Client({ connectionString: `${server}/postgres` });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return { engine, env: { DATABASE_URL: `${server}/${name}`, SECRET_KEY }, dispose: async () => {} };
}

/** A child process listening on 127.0.0.1, with the pid of the node process that serves. */
export interface RunningProcess {
  url: string;
  /** pid of the process doing the work (the leaf node process, not the npx/tsx wrappers). */
  pid: number;
  stop(): Promise<void>;
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0 && out.length < 50) {
    for (const kid of childrenOf(queue.shift()!)) {
      out.push(kid);
      queue.push(kid);
    }
  }
  return out;
}

/**
 * The node process that runs the script: the child itself when it is node (`npm start`'s command),
 * else the one below it that tsx starts with its loader (`--import .../loader.mjs`), since npx and
 * tsx each wrap it in one more process and esbuild's service hangs below it.
 */
function workerOf(pid: number, script: string): number {
  const cmdlineOf = (p: number) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
    } catch {
      return [];
    }
  };
  const own = cmdlineOf(pid);
  if (own[0]?.endsWith('node') && own.includes(script)) return pid;
  const candidates = descendantsOf(pid).filter((p) => {
    const cmdline = cmdlineOf(p);
    return cmdline.some((a) => a.includes('loader.mjs')) && cmdline.includes(script);
  });
  if (candidates.length !== 1)
    throw new Error(`expected one node process running ${script} under ${pid}, found ${candidates.length}`);
  return candidates[0];
}

async function waitReady(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} before it was ready`);
    try {
      const res = await request(url, { headersTimeout: 2000, bodyTimeout: 2000 });
      await res.body.dump();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms`);
}

async function portAnswers(port: number): Promise<boolean> {
  try {
    const res = await request(`http://127.0.0.1:${port}/`, { headersTimeout: 1000, bodyTimeout: 1000 });
    await res.body.dump();
    return true;
  } catch {
    return false;
  }
}

/**
 * Spawns a command in its own process group and waits for its readiness URL. With `onLine`, its
 * standard output goes there a line at a time (a benchmark that waits for a log line) instead of
 * to this process's.
 */
export async function spawnProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
  onLine?: (line: string) => void,
): Promise<RunningProcess> {
  if (await portAnswers(port))
    throw new Error(`port ${port} is already in use on 127.0.0.1: choose another with --port`);
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', onLine ? 'pipe' : 'inherit', 'inherit'],
    detached: true,
  });
  if (onLine && child.stdout) createInterface({ input: child.stdout }).on('line', onLine);
  const url = `http://127.0.0.1:${port}`;
  let pid: number;
  try {
    await waitReady(url + readyPath, child, 120_000);
    pid = workerOf(child.pid!, args[args.length - 1]);
  } catch (err) {
    if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    throw err;
  }
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(-child.pid!, 'SIGTERM');
    const timer = setTimeout(() => child.exitCode === null && process.kill(-child.pid!, 'SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  return { url, pid, stop };
}

/**
 * The command line of `npm start` (`exec node --max-old-space-size=192 ... dist/server.js`, without
 * the `exec`), read from package.json so the benchmarks run the service exactly as users do, heap
 * bound included. The
 * bound applies to the service only: the benchmark's own processes (the data generator, autocannon)
 * run unbounded. A heap bound given in `NODE_OPTIONS` (bench/profile.ts) replaces the script's.
 */
function startCommand(nodeOptions: string | undefined): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const args = pkg.scripts.start
    .trim()
    .split(/\s+/)
    .filter((a, i) => !(i === 0 && a === 'exec'));
  return nodeOptions?.includes('--max-old-space-size')
    ? args.filter((a) => !a.startsWith('--max-old-space-size'))
    : args;
}

/**
 * Starts the service the way a user does: the `npm start` command line, with its environment; its
 * log lines go to `onLine` when given (spawnProcess).
 */
export function startService(
  storage: Storage,
  port: number,
  extraEnv: Record<string, string> = {},
  onLine?: (line: string) => void,
): Promise<RunningProcess> {
  const env: Record<string, string> = {
    ...storage.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN,
    SEED_DEMO: 'false',
    LOG_LEVEL: 'warn',
    // The fake Graph API and webhook receivers listen on loopback, a private target.
    ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
    ...extraEnv,
  };
  // What `npm start` runs: the build (its prestart), then node on the output.
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const [command, ...args] = startCommand(env.NODE_OPTIONS ?? process.env.NODE_OPTIONS);
  return spawnProcess(command, args, env, port, '/readyz', onLine);
}

/** A business and an API key, created through the operator API. */
export interface Tenant {
  businessId: string;
  apiKey: string;
}

async function adminPost<T>(url: string, path: string, body: unknown): Promise<T> {
  const res = await request(url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as T;
  if (res.statusCode !== 201) throw new Error(`POST ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

export async function createTenant(url: string): Promise<Tenant> {
  const { business } = await adminPost<{ business: { id: string } }>(url, '/admin/v1/businesses', {
    name: 'Bench business',
  });
  const { key } = await adminPost<{ key: string }>(url, `/admin/v1/businesses/${business.id}/api-keys`, {
    name: 'bench',
  });
  return { businessId: business.id, apiKey: key };
}
