import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';

const ROOT = new URL('../..', import.meta.url).pathname;

/** One server process the test started: where it listens, and how to stop or kill it. */
export interface ServerProcess {
  url: string;
  pid: number;
  /** Its last log lines, for a failing test's message. */
  log(): string;
  /** SIGKILL: no shutdown, its database sessions end when the server notices the dropped sockets. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The service bundled as `npm run build` bundles it, into a directory of its own under the project
 * (so its packages resolve from node_modules): node starts a bundle in about a second, where tsx
 * compiles the sources again in each process (about 8 s each on a busy 2-core machine).
 */
export async function bundleServer(): Promise<{ entry: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(ROOT, '.server-bundle-'));
  const entry = join(dir, 'server.mjs');
  await build({
    entryPoints: [join(ROOT, 'src/server.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    outfile: entry,
    logLevel: 'warning',
  });
  return { entry, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Starts `node <entry>` with `env` on a free port and resolves once it listens. */
export async function startServerProcess(entry: string, env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [entry], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SEED_DEMO: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let url: string | undefined;
  let listening: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (listening = resolve));
  const read = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line) continue;
      lines.push(line);
      if (lines.length > 200) lines.shift();
      const found = /Server listening at (http:\/\/[\d.:]+)/.exec(line);
      if (found && !url) {
        url = found[1];
        listening();
      }
    }
  };
  child.stdout.on('data', read);
  child.stderr.on('data', read);
  const exited = once(child, 'exit');
  const failed = exited.then(([code, signal]) => {
    throw new Error(`server exited (${code ?? signal}) before it listened:\n${lines.join('\n')}`);
  });
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`server did not listen within 60 s:\n${lines.join('\n')}`)), 60_000).unref(),
  );
  try {
    await Promise.race([ready, failed, timeout]);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  failed.catch(() => undefined);
  const end = async (signal: NodeJS.Signals) => {
    if (!hasEnded(child)) {
      child.kill(signal);
      await exited;
    }
  };
  return {
    url: url!,
    pid: child.pid!,
    log: () => lines.join('\n'),
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
  };
}

const hasEnded = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;
