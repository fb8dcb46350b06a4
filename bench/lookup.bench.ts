/**
 * Lookup benchmark: GET /external/v2/contacts?phone= and GET /external/v2/conversations?phone= with a
 * random existing phone per request (30% in the other mobile-digit form), against a bare Fastify
 * process answering the same bytes, in the same run; then a fixed 200 requests/s run for the p99.
 *
 * The fixed-rate run is an open loop (bench/lib/messaging-load.ts): request i is due at i / 200 s and
 * its latency counts from then. autocannon's `overallRate` is not used for it: it gives each
 * connection a quota per second that the connection sends back to back at the start of the second,
 * so "200/s" arrives as one burst of 200 each second, and the p99 it reports is that of the burst
 * (14-31 ms against 4-8 ms for the same service at an even 200/s, measured 2026-11-22).
 */
import { request } from 'undici';
import { startBare } from './lib/bare.ts';
import { queryPhoneOf, randomQueryPhone, rng } from './lib/generate.ts';
import { CpuMeter, load, postgresBackends, type LoadResult } from './lib/measure.ts';
import { openLoop } from './lib/messaging-load.ts';
import type { RunningProcess, Tenant } from './lib/service.ts';

export const LOOKUP_ROUTES = {
  contacts: '/external/v2/contacts',
  conversations: '/external/v2/conversations',
} as const;
export type LookupRoute = keyof typeof LOOKUP_ROUTES;

/** CPU milliseconds per request: server process, PostgreSQL backends (postgres engine), bare process. */
export interface CpuPerRequest {
  serviceMs: number;
  postgresMs: number;
  bareMs: number;
  /** The floor's process and its PostgreSQL backends (none on PGlite, which runs in it). */
  floorMs?: { processMs: number; postgresMs: number };
}

export interface LookupResult {
  route: LookupRoute;
  /** Connections autocannon kept open (each with one request in flight), for both processes. */
  connections: number;
  bodyBytes: number;
  service: LoadResult;
  bare: LoadResult;
  ratio: number;
  /**
   * The same bytes read by one prepared primary-key read per request with no auth or validation
   * (bench/bare-server.ts), and its requests per second against the bare route's: what a database
   * round trip alone leaves of the bare route on this machine.
   */
  floor?: LoadResult;
  floorRatio?: number;
  cpu: CpuPerRequest;
  fixedRate?: LoadResult;
}

export interface LookupOptions {
  contacts: number;
  durationSec: number;
  warmupSec: number;
  /**
   * Concurrency levels of the throughput comparison, each run on both processes. The service's
   * capacity shows at the highest: with few connections each request waits for its database round
   * trip and the service is partly idle, while the bare route is busy at any level.
   */
  connections: number[];
  /** Database whose PostgreSQL backends count in the CPU figures (postgres engine only). */
  database?: string;
  /** The floor's database: PostgreSQL at `databaseUrl`, or else PGlite (bench/lib/bare.ts); no floor without it. */
  floor?: { databaseUrl?: string };
  /** Run the fixed-rate (200/s, 20 s) latency check too. */
  fixedRate?: { rate: number; durationSec: number };
  barePort: number;
}

/**
 * Checks that lookups in both phone forms find the contact and its one conversation, so the
 * throughput figures are of real answers (200 with data), not of fast 404s.
 */
export async function checkAnswers(
  service: RunningProcess,
  tenant: Tenant,
  contacts: number,
  samples = 40,
): Promise<string[]> {
  const problems: string[] = [];
  const random = rng(7);
  for (let s = 0; s < samples; s++) {
    const i = Math.floor(random() * contacts);
    const phone = queryPhoneOf(i, s % 2 === 1);
    for (const route of Object.values(LOOKUP_ROUTES)) {
      const res = await request(`${service.url}${route}?phone=${phone}`, { headers: { 'x-api-key': tenant.apiKey } });
      const body = (await res.body.json()) as { results?: unknown[] };
      const ok = res.statusCode === 200 && (route !== LOOKUP_ROUTES.contacts || body.results?.length === 1);
      if (!ok)
        problems.push(
          `${route}?phone=${phone} (contact ${i}): ${res.statusCode} ${JSON.stringify(body).slice(0, 200)}`,
        );
    }
  }
  return problems;
}

export async function runLookups(
  service: RunningProcess,
  tenant: Tenant,
  options: LookupOptions,
): Promise<LookupResult[]> {
  const random = rng(42);
  const sample = queryPhoneOf(0, false);
  const bare = await startBare(
    service.url,
    tenant.apiKey,
    {
      [LOOKUP_ROUTES.contacts]: `${LOOKUP_ROUTES.contacts}?phone=${sample}`,
      [LOOKUP_ROUTES.conversations]: `${LOOKUP_ROUTES.conversations}?phone=${sample}`,
    },
    options.barePort,
    options.floor,
  );
  const headers = { 'x-api-key': tenant.apiKey };
  const results: LookupResult[] = [];
  try {
    for (const route of Object.keys(LOOKUP_ROUTES) as LookupRoute[]) {
      const path = () => `${LOOKUP_ROUTES[route]}?phone=${randomQueryPhone(options.contacts, random)}`;
      for (const connections of options.connections) {
        const run = (url: string, durationSec: number, prefix = '') =>
          load({ url, path: () => prefix + path(), headers, connections, durationSec });
        const withFloor = options.floor !== undefined;
        process.stderr.write(
          `  lookup ${route}, ${connections} connections: warm-up, then ${options.durationSec} s service / ${options.durationSec} s bare${withFloor ? ` / ${options.durationSec} s floor` : ''}\n`,
        );
        await run(service.url, options.warmupSec);
        await run(bare.url, options.warmupSec);
        const serviceCpu = new CpuMeter(() => [service.pid]).start();
        const pgCpu = new CpuMeter(() => (options.database ? postgresBackends(options.database) : [])).start();
        const serviceResult = await run(service.url, options.durationSec);
        const [serviceSec, pgSec] = [serviceCpu.seconds(), pgCpu.seconds()];
        const bareCpu = new CpuMeter(() => [bare.pid]).start();
        const bareResult = await run(bare.url, options.durationSec);
        const bareSec = bareCpu.seconds();
        const perRequest = (sec: number, r: LoadResult) => (sec * 1000) / Math.max(1, r.requests);
        const floor = withFloor
          ? await measureFloor((durationSec) => run(bare.url, durationSec, '/floor'), bare.pid, options)
          : undefined;
        results.push({
          route,
          connections,
          bodyBytes: bare.bodyBytes[LOOKUP_ROUTES[route]],
          service: serviceResult,
          bare: bareResult,
          ratio: serviceResult.requestsPerSec / bareResult.requestsPerSec,
          floor: floor?.result,
          floorRatio: floor && floor.result.requestsPerSec / bareResult.requestsPerSec,
          cpu: {
            serviceMs: perRequest(serviceSec, serviceResult),
            postgresMs: perRequest(pgSec, serviceResult),
            bareMs: perRequest(bareSec, bareResult),
            floorMs: floor?.cpu,
          },
        });
      }
      if (options.fixedRate) {
        process.stderr.write(
          `  lookup ${route}: ${options.fixedRate.rate} requests/s for ${options.fixedRate.durationSec} s\n`,
        );
        const fixedRate = await evenRate(service.url, path, headers, options.connections[0], options.fixedRate);
        results.find((r) => r.route === route)!.fixedRate = fixedRate;
      }
    }
  } finally {
    await bare.stop();
  }
  return results;
}

/** The floor's rate (after a warm-up) and its CPU per request: the bare process's and its PostgreSQL backends'. */
async function measureFloor(run: (durationSec: number) => Promise<LoadResult>, pid: number, options: LookupOptions) {
  await run(options.warmupSec);
  const processCpu = new CpuMeter(() => [pid]).start();
  const postgresCpu = new CpuMeter(() => (options.database ? postgresBackends(options.database) : [])).start();
  const result = await run(options.durationSec);
  if (result.non2xx + result.errors > 0)
    throw new Error(`the floor route failed: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const perRequest = (sec: number) => (sec * 1000) / Math.max(1, result.requests);
  return {
    result,
    cpu: { processMs: perRequest(processCpu.seconds()), postgresMs: perRequest(postgresCpu.seconds()) },
  };
}

/** `rate` requests a second for `durationSec`, evenly spaced (open loop), in autocannon's result shape. */
async function evenRate(
  url: string,
  path: () => string,
  headers: Record<string, string>,
  connections: number,
  fixed: { rate: number; durationSec: number },
): Promise<LoadResult> {
  const requests = Array.from({ length: fixed.rate * fixed.durationSec }, (_, i) => ({
    id: String(i),
    method: 'GET' as const,
    path: path(),
    headers,
  }));
  const result = await openLoop(url, requests, fixed.rate, { connections });
  const ms = (v: number) => Math.round(v * 10) / 10;
  return {
    requestsPerSec: result.sent / (fixed.durationSec || 1),
    p50Ms: ms(result.fromDue.p50),
    p99Ms: ms(result.fromDue.p99),
    maxMs: ms(result.fromDue.max),
    requests: result.sent,
    non2xx: result.rejected.length,
    errors: result.failed.length,
    timeouts: 0,
  };
}
