import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { spawnProcess, type RunningProcess } from './service.ts';

/** Headers every Fastify reply has anyway; the rest are copied so both answers have one shape. */
const OWN_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive']);

/**
 * Asks the service once per route (`samplePaths`: route path -> a path with query that answers
 * 200) and starts the bare Fastify process answering those routes with the same bytes, and, given
 * `floor`, `/floor<route>` reading them from the database (bench/bare-server.ts): PostgreSQL at
 * `floor.databaseUrl`, or else PGlite in a directory of its own, removed with the process's files.
 */
export async function startBare(
  serviceUrl: string,
  apiKey: string,
  samplePaths: Record<string, string>,
  port: number,
  floor?: { databaseUrl?: string },
): Promise<RunningProcess & { bodyBytes: Record<string, number> }> {
  const captured = [];
  const bodyBytes: Record<string, number> = {};
  for (const [route, sample] of Object.entries(samplePaths)) {
    const res = await request(serviceUrl + sample, { headers: { 'x-api-key': apiKey } });
    const body = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET ${sample}: ${res.statusCode} ${body}`);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(res.headers)) {
      if (!OWN_HEADERS.has(name) && typeof value === 'string') headers[name] = value;
    }
    captured.push({ path: route, contentType: String(res.headers['content-type']), headers, body });
    bodyBytes[route] = Buffer.byteLength(body);
  }
  const dir = mkdtempSync(join(tmpdir(), 'bench-bare-'));
  const file = join(dir, 'responses.json');
  writeFileSync(file, JSON.stringify(captured));
  try {
    const running = await spawnProcess(
      'npx',
      ['tsx', 'bench/bare-server.ts'],
      { PORT: String(port), BARE_RESPONSES: file, ...floorEnv(floor, dir) },
      port,
      '/readyz',
    );
    const stop = async () => {
      await running.stop();
      rmSync(dir, { recursive: true, force: true });
    };
    return { ...running, stop, bodyBytes };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function floorEnv(floor: { databaseUrl?: string } | undefined, dir: string): Record<string, string> {
  if (!floor) return {};
  return floor.databaseUrl ? { FLOOR_DATABASE_URL: floor.databaseUrl } : { FLOOR_DATA_DIR: join(dir, 'floor-pglite') };
}
