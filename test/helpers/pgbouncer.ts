import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

/** A PgBouncer of one test file, in transaction mode in front of one PostgreSQL database. */
export interface TestPgBouncer {
  /** The database through PgBouncer. */
  url: string;
  /** What PgBouncer has written to its log so far (connections, errors). */
  log(): string;
  close(): Promise<void>;
}

/** Whether Debian's pgbouncer is installed (.ci/run installs it; a test skips without it). */
export const pgbouncerInstalled = spawnSync('pgbouncer', ['--version'], { stdio: 'ignore' }).status === 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function listening(port: number, exited: () => boolean, log: () => string): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (exited()) throw new Error(`pgbouncer exited at start:\n${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`pgbouncer did not listen:\n${log()}`);
}

/**
 * Starts PgBouncer on a free loopback port in transaction pooling mode in front of the database of
 * `databaseUrl` (trust authentication, its user listed in the auth file, which trust still asks for),
 * with `poolSize` server connections shared by all clients. Each server connection starts in
 * `timeZone`, as on a server configured for local time. PgBouncer refuses to run as root: then it
 * drops to `nobody` (-u), which reads its files from a world-readable folder and logs to stderr.
 */
export async function startPgBouncer(
  databaseUrl: string,
  options: { poolSize: number; timeZone: string },
): Promise<TestPgBouncer> {
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username) || userInfo().username;
  const database = decodeURIComponent(target.pathname.slice(1));
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbouncer-test-'));
  await chmod(dir, 0o755);
  const port = await freePort();
  await writeFile(path.join(dir, 'users.txt'), `"${user}" ""\n`);
  const config = `[databases]
${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database} timezone=${options.timeZone}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
pidfile =
auth_type = trust
auth_file = ${dir}/users.txt
pool_mode = transaction
default_pool_size = ${options.poolSize}
max_client_conn = 200
`;
  await writeFile(path.join(dir, 'pgbouncer.ini'), config);
  const args = [...(userInfo().uid === 0 ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')];
  const child: ChildProcess = spawn('pgbouncer', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exited = false;
  const ended = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  const log = () => output;
  try {
    await listening(port, () => exited, log);
  } catch (err) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    log,
    async close() {
      if (!exited) {
        // Immediate shutdown up to PgBouncer 1.22; later ones wait for their clients to leave first.
        child.kill('SIGTERM');
        const stuck = setTimeout(() => child.kill('SIGKILL'), 2_000);
        await ended;
        clearTimeout(stuck);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
