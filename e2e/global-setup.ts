// Starts the service as `npm start` runs it (the built dist/server.js) on a free port, over a new
// embedded database in a scratch DATA_DIR with the demo business and a scripted language model on
// loopback, for the browser tests; stops both and removes the directory after them. What the tests need
// is handed over in the environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeLlmApi } from '../test/helpers/fake-llm-api.ts';
import { ADMIN_TOKEN } from './service.ts';

const ROOT = join(import.meta.dirname, '..');

/** A port no one listens on now, for PUBLIC_URL to name before the service starts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function until(ready: () => boolean, service: ChildProcess, output: () => string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (service.exitCode !== null) throw new Error(`the service stopped (${service.exitCode}):\n${output()}`);
    if (Date.now() > deadline) throw new Error(`the service did not start within ${ms / 1000} s:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  for (const built of ['dist/server.js', 'web/dist/index.html'])
    if (!existsSync(join(ROOT, built)))
      throw new Error(`${built} is missing: run \`npm run build && npm run build:web\` (npm run test:browser does)`);

  // The AI agents' model: an OpenAI-compatible API answering each message "Reply to: <its text>". Only
  // conversations given an agent call it; the demo's have none.
  const llm = await startFakeLlmApi();
  const dataDir = await mkdtemp(join(tmpdir(), 'dashboard-e2e-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = spawn(process.execPath, ['--enable-source-maps', 'dist/server.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      ADMIN_TOKEN,
      SEED_DEMO: 'true',
      // The Dev Tools tests' trigger and the inbox tests' fake Graph API listen on loopback.
      ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
      LOG_LEVEL: 'info',
      LLM_URL: llm.url,
      LLM_API_KEY: 'e2e-llm-key',
      // An account is locked at its third failure, so that the test of the lockout message is short; the
      // client address (every test's) never is.
      DASHBOARD_SIGN_IN_ACCOUNT_DELAY_AFTER: '3',
      DASHBOARD_SIGN_IN_ACCOUNT_LOCK_AFTER: '3',
      DASHBOARD_SIGN_IN_ADDRESS_DELAY_AFTER: '1000',
      DASHBOARD_SIGN_IN_ADDRESS_LOCK_AFTER: '1000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  service.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  service.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    // The demo business is created after the service listens; its API key is printed last. Beside the
    // rest of `npm test` on two cores, a first start (a new database, its migrations, the demo data)
    // can take minutes.
    await until(
      () => /X-API-Key: /.test(output),
      service,
      () => output,
      240_000,
    );
  } catch (err) {
    service.kill('SIGKILL');
    await llm.close();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  process.env.E2E_BASE_URL = url;
  // What the first start printed besides its log: the demo business's key and sign-in.
  process.env.E2E_SERVICE_OUTPUT = output
    .split('\n')
    .filter((line) => !line.startsWith('{'))
    .join('\n');

  return async () => {
    const exited = new Promise((resolve) => service.once('exit', resolve));
    service.kill('SIGTERM');
    await exited;
    await llm.close();
    await rm(dataDir, { recursive: true, force: true });
  };
}
