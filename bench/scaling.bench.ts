/**
 * Size independence: the median latency of the phone lookups, one request at a time, on a small
 * and a large data set loaded through the import into fresh storage, with the same query mix.
 */
import { runImport, type ImportResult } from './import.bench.ts';
import { randomQueryPhone, rng, type DataSetShape } from './lib/generate.ts';
import { sequential, type SequentialResult } from './lib/measure.ts';
import { createTenant, freshStorage, startService, type Engine, type RunningProcess, type Tenant } from './lib/service.ts';
import { checkAnswers, LOOKUP_ROUTES, type LookupRoute } from './lookup.bench.ts';

export interface MedianResult {
  contacts: number;
  route: LookupRoute;
  latency: SequentialResult;
}

/** Median (and p90/p99) of each lookup, `count` sequential requests after `warmup` of them. */
export async function measureMedians(service: RunningProcess, tenant: Tenant, contacts: number, count: number, warmup: number): Promise<MedianResult[]> {
  const headers = { 'x-api-key': tenant.apiKey };
  const out: MedianResult[] = [];
  for (const route of Object.keys(LOOKUP_ROUTES) as LookupRoute[]) {
    const random = rng(1234);
    const path = () => `${LOOKUP_ROUTES[route]}?phone=${randomQueryPhone(contacts, random)}`;
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

/** Loads one data set into fresh storage, measures the medians, and removes everything again. */
export async function runScalingSize(engine: Engine, shape: DataSetShape, port: number, count: number, database = 'bench_speed'): Promise<ScalingRun> {
  const storage = await freshStorage(engine, database);
  const service = await startService(storage, port);
  try {
    const tenant = await createTenant(service.url);
    const load = await runImport(service, tenant, shape, ` ${shape.contacts} contacts`, engine === 'postgres' ? database : undefined);
    const answerProblems = await checkAnswers(service, tenant, shape.contacts, 10);
    const medians = await measureMedians(service, tenant, shape.contacts, count, Math.min(500, count));
    return { shape, load, medians, answerProblems };
  } finally {
    await service.stop();
    await storage.dispose();
  }
}
