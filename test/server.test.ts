import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { engine } from './helpers/test-app.ts';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

// The process as a user starts it: `npm start` builds, starts node on the output and stops with npm.
describe.runIf(engine === 'pglite')('npm start', () => {
  it('logs each start-up step, serves, and stops cleanly when npm is sent SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'server-test-'));
    dirs.push(dir);
    const env = { ...process.env, DATA_DIR: join(dir, 'data'), PORT: '0', LOG_LEVEL: 'info', SEED_DEMO: 'false' };
    const npm = spawn('npm', ['start', '--silent'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(npm, 'exit');
    // A fresh embedded database: initdb and every migration, which a loaded 2-core machine takes minutes over.
    const deadline = Date.now() + 150_000;
    while (!/Server listening at (http:\/\/[\d.:]+)/.test(output) && Date.now() < deadline && npm.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const url = /Server listening at (http:\/\/[\d.:]+)/.exec(output)?.[1];
    expect(url, output).toBeDefined();
    const steps = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; pid: number });
    expect(steps.map((line) => line.msg)).toEqual(
      expect.arrayContaining(['opening the database', 'migrations applied', `Server listening at ${url}`]),
    );
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const server = steps[0].pid;
    npm.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    expect(output).toContain('"msg":"shutting down"');
    expect(alive(server)).toBe(false);
  }, 180_000);
});
