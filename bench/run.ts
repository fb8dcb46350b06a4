/**
 * Runs the benchmarks of issue 2 and prints Markdown tables (for docs/PERFORMANCE.md); the raw
 * figures go to a JSON file under /tmp.
 *
 *   npm run bench -- [--engine postgres|pglite|both] [--size 100000] [--messages 1000000]
 *                    [--only import,lookup,scaling] [--scale 10000,1000000] [--scale-messages 1]
 *                    [--duration 10] [--warmup 3] [--connections 10,100] [--count 2000] [--db bench_speed]
 *                    [--max-import-seconds 1800]
 *
 * PostgreSQL: PG_URL (default postgres://postgres@127.0.0.1:5432); the database `--db` (default
 * bench_speed) is dropped and created anew for each data set. PGlite: a new directory under /tmp, removed afterwards.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runImport, type ImportResult } from './import.bench.ts';
import { fixedRateTable, importTable, lookupTable, scalingTable } from './lib/report.ts';
import { createTenant, freshStorage, startService, type Engine } from './lib/service.ts';
import { checkAnswers, runLookups, type LookupResult } from './lookup.bench.ts';
import { measureMedians, runScaling, type MedianResult, type ScalingRun } from './scaling.bench.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'both' },
    size: { type: 'string', default: '100000' },
    messages: { type: 'string', default: '1000000' },
    only: { type: 'string', default: 'import,lookup,scaling' },
    scale: { type: 'string', default: '10000,1000000' },
    'scale-messages': { type: 'string', default: '1' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10,100' },
    count: { type: 'string', default: '2000' },
    port: { type: 'string', default: '3900' },
    db: { type: 'string', default: 'bench_speed' },
    'max-import-seconds': { type: 'string', default: '1800' },
  },
});

const engines: Engine[] = values.engine === 'both' ? ['postgres', 'pglite'] : [values.engine as Engine];
if (!engines.every((e) => e === 'postgres' || e === 'pglite'))
  throw new Error('--engine must be postgres, pglite or both');
const only = new Set(values.only.split(','));
const contacts = Number(values.size);
const messagesPerConversation = Math.round(Number(values.messages) / contacts);
const scaleSizes = values.scale.split(',').map(Number);
const port = Number(values.port);
const lookupOptions = {
  contacts,
  durationSec: Number(values.duration),
  warmupSec: Number(values.warmup),
  connections: values.connections.split(',').map(Number),
  fixedRate: { rate: 200, durationSec: 20 },
  barePort: port + 1,
};

interface EngineReport {
  engine: Engine;
  imports: { label: string; result: ImportResult }[];
  lookups: LookupResult[];
  medians100k: MedianResult[];
  scaling: ScalingRun[];
  answerProblems: string[];
}

async function runEngine(engine: Engine): Promise<EngineReport> {
  const report: EngineReport = { engine, imports: [], lookups: [], medians100k: [], scaling: [], answerProblems: [] };
  if (only.has('import') || only.has('lookup')) {
    process.stderr.write(`[${engine}] ${contacts} contacts, ${messagesPerConversation} messages each\n`);
    const storage = await freshStorage(engine, values.db);
    const service = await startService(storage, port);
    try {
      const tenant = await createTenant(service.url);
      const result = await runImport(
        service,
        tenant,
        { contacts, messagesPerConversation },
        ` ${contacts} contacts`,
        engine === 'postgres' ? values.db : undefined,
        Number(values['max-import-seconds']),
      );
      const stopped = result.stoppedByTimeBound ? ` (stopped by the time bound at ${result.contacts} contacts)` : '';
      report.imports.push({
        label: `${contacts} contacts + ${contacts * messagesPerConversation} messages${stopped}`,
        result,
      });
      if (only.has('lookup')) {
        // A time-bounded load asks only for the contacts that went in.
        const loaded = result.contacts;
        report.answerProblems.push(...(await checkAnswers(service, tenant, loaded)));
        report.lookups = await runLookups(service, tenant, {
          ...lookupOptions,
          contacts: loaded,
          database: engine === 'postgres' ? values.db : undefined,
          floor: { databaseUrl: engine === 'postgres' ? storage.env.DATABASE_URL : undefined },
        });
        report.medians100k = await measureMedians(service, tenant, loaded, Number(values.count), 500);
      }
    } finally {
      await service.stop();
      await storage.dispose();
    }
  }
  if (only.has('scaling')) {
    const runs = await runScaling({
      engine,
      sizes: scaleSizes,
      messagesPerConversation: Number(values['scale-messages']),
      port: port + 10,
      count: Number(values.count),
      database: `${values.db}_scale`,
      maxImportSeconds: Number(values['max-import-seconds']),
    });
    for (const run of runs) {
      report.scaling.push(run);
      const stopped = run.load.stoppedByTimeBound
        ? ` (stopped by the time bound at ${run.load.contacts} contacts)`
        : '';
      report.imports.push({
        label: `${run.shape.contacts} contacts + ${run.shape.contacts * run.shape.messagesPerConversation} messages (scaling)${stopped}`,
        result: run.load,
      });
      report.answerProblems.push(...run.answerProblems);
    }
  }
  return report;
}

const reports: EngineReport[] = [];
for (const engine of engines) reports.push(await runEngine(engine));

const file = join(tmpdir(), `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify({ args: values, reports }, null, 2));

const out: string[] = [`Run of ${new Date().toISOString()} (raw figures: ${file})`, ''];
out.push('### Import', '', importTable(reports.flatMap((r) => r.imports.map((i) => ({ engine: r.engine, ...i })))), '');
for (const r of reports) {
  if (r.lookups.length === 0) continue;
  out.push(
    `### Lookup throughput, ${r.engine}`,
    '',
    lookupTable(r.engine, r.lookups),
    '',
    fixedRateTable(r.engine, r.lookups),
    '',
  );
}
for (const r of reports) {
  if (r.scaling.length < 2) continue;
  const [small, large] = [r.scaling[0], r.scaling[r.scaling.length - 1]];
  out.push(`### Size independence, ${r.engine}`, '', scalingTable(r.engine, small.medians, large.medians), '');
}
for (const r of reports) {
  if (r.medians100k.length > 0) {
    out.push(
      `Sequential medians at ${r.medians100k[0].contacts} contacts, ${r.engine}: ` +
        r.medians100k
          .map((m) => `${m.route} ${m.latency.medianMs.toFixed(2)} ms (p99 ${m.latency.p99Ms.toFixed(2)})`)
          .join(', '),
      '',
    );
  }
  if (r.answerProblems.length > 0)
    out.push(
      `**Wrong answers on ${r.engine}** (${r.answerProblems.length}):`,
      '',
      ...r.answerProblems.slice(0, 10).map((p) => `- ${p}`),
      '',
    );
}
process.stdout.write(out.join('\n') + '\n');
