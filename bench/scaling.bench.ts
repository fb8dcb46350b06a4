/**
 * Size independence: the median latency of the phone lookups, one request at a time, on a small
 * and a large data set, each loaded through the import into its own fresh storage and served by its
 * own service process. Both services stay up and are measured in alternating rounds, so that other
 * load on the machine falls on both alike.
 */
import { runImport, type ImportResult } from './import.bench.ts';
import { randomQueryPhone, rng, type DataSetShape } from './lib/generate.ts';
import { sequential, sequentialTimes, summarize, type SequentialResult } from './lib/measure.ts';
import {
  createTenant,
  freshStorage,
  startService,
  type Engine,
  type RunningProcess,
  type Storage,
  type Tenant,
} from './lib/service.ts';
import { checkAnswers, LOOKUP_ROUTES, type LookupRoute } from './lookup.bench.ts';

export interface MedianResult {
  contacts: number;
  route: LookupRoute;
  latency: SequentialResult;
}

const lookupPath = (route: LookupRoute, contacts: number, random: () => number) => () =>
  `${LOOKUP_ROUTES[route]}?phone=${randomQueryPhone(contacts, random)}`;

/** Median (and p90/p99) of each lookup, `count` sequential requests after `warmup` of them. */
export async function measureMedians(
  service: RunningProcess,
  tenant: Tenant,
  contacts: number,
  count: number,
  warmup: number,
): Promise<MedianResult[]> {
  const headers = { 'x-api-key': tenant.apiKey };
  const out: MedianResult[] = [];
  for (const route of Object.keys(LOOKUP_ROUTES) as LookupRoute[]) {
    const path = lookupPath(route, contacts, rng(1234));
    await sequential(service.url, path, headers, warmup, 60_000);
    out.push({ contacts, route, latency: await sequential(service.url, path, headers, count, 120_000) });
  }
  return out;
}

export interface ScalingRun {
  shape: DataSetShape;
  load: ImportResult;
  medians: MedianResult[];
  answerProblems: string[];
}

interface Loaded {
  shape: DataSetShape;
  storage: Storage;
  service: RunningProcess;
  tenant: Tenant;
  load: ImportResult;
}

export interface ScalingOptions {
  engine: Engine;
  sizes: number[];
  messagesPerConversation: number;
  port: number;
  /** Sequential requests per route and data set. */
  count: number;
  database: string;
  maxImportSeconds: number;
  rounds?: number;
}

/**
 * Loads each data set into its own storage and service, then measures all of them in alternating
 * rounds of count/rounds requests per route; removes everything at the end.
 */
export async function runScaling(options: ScalingOptions): Promise<ScalingRun[]> {
  const loaded: Loaded[] = [];
  const rounds = options.rounds ?? 10;
  try {
    for (const [index, size] of options.sizes.entries()) {
      process.stderr.write(`[${options.engine}] scaling: loading ${size} contacts\n`);
      const shape = { contacts: size, messagesPerConversation: options.messagesPerConversation };
      const storage = await freshStorage(options.engine, `${options.database}_${index}`);
      const service = await startService(storage, options.port + index);
      const entry = { shape, storage, service, tenant: await createTenant(service.url) } as Loaded;
      loaded.push(entry);
      entry.load = await runImport(
        service,
        entry.tenant,
        shape,
        ` ${size} contacts`,
        options.engine === 'postgres' ? `${options.database}_${index}` : undefined,
        options.maxImportSeconds,
      );
    }
    const results: ScalingRun[] = [];
    const times = loaded.map(() => ({}) as Record<LookupRoute, { times: number[]; failures: number }>);
    for (const route of Object.keys(LOOKUP_ROUTES) as LookupRoute[]) {
      process.stderr.write(`[${options.engine}] scaling: ${route}, ${rounds} alternating rounds\n`);
      const paths = loaded.map((l, i) => lookupPath(route, l.load.contacts, rng(1234 + i)));
      for (const [i, l] of loaded.entries()) {
        await sequential(l.service.url, paths[i], { 'x-api-key': l.tenant.apiKey }, 300, 60_000);
        times[i][route] = { times: [], failures: 0 };
      }
      for (let round = 0; round < rounds; round++) {
        for (const [i, l] of loaded.entries()) {
          const part = await sequentialTimes(
            l.service.url,
            paths[i],
            { 'x-api-key': l.tenant.apiKey },
            Math.ceil(options.count / rounds),
            30_000,
          );
          times[i][route].times.push(...part.times);
          times[i][route].failures += part.failures;
        }
      }
    }
    for (const [i, l] of loaded.entries()) {
      // A time-bounded load asks only for the contacts that went in.
      const answerProblems = await checkAnswers(l.service, l.tenant, l.load.contacts, 10);
      const medians = (Object.keys(LOOKUP_ROUTES) as LookupRoute[]).map((route) => ({
        contacts: l.load.contacts,
        route,
        latency: summarize(times[i][route].times, times[i][route].failures),
      }));
      results.push({ shape: l.shape, load: l.load, medians, answerProblems });
    }
    return results;
  } finally {
    for (const l of loaded) {
      await l.service.stop();
      await l.storage.dispose();
    }
  }
}
