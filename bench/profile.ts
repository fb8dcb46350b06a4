/**
 * Where the service's CPU goes on a lookup: starts it with a CPU profiler preloaded, loads a small data set,
 * runs autocannon on one route, stops it, and prints the functions and packages with the most
 * self time, and how long the service's main thread ran and waited for a core per request (the
 * profiler's own cost included). For finding the cause when a lookup target is missed.
 *
 *   npx tsx bench/profile.ts [--phase lookup|import] [--engine postgres|pglite] [--route contacts|conversations]
 *                            [--size 10000] [--messages 10] [--duration 10] [--connections 10]
 *                            [--node-options=--max-old-space-size=96]
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runImport } from './import.bench.ts';
import { randomQueryPhone, rng } from './lib/generate.ts';
import { load, schedulerNs } from './lib/measure.ts';
import { createTenant, freshStorage, startService, type Engine } from './lib/service.ts';
import { LOOKUP_ROUTES, type LookupRoute } from './lookup.bench.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    route: { type: 'string', default: 'contacts' },
    size: { type: 'string', default: '10000' },
    messages: { type: 'string', default: '10' },
    duration: { type: 'string', default: '10' },
    port: { type: 'string', default: '3930' },
    phase: { type: 'string', default: 'lookup' },
    'node-options': { type: 'string', default: '' },
    top: { type: 'string', default: '30' },
    connections: { type: 'string', default: '10' },
  },
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const dir = mkdtempSync(join(tmpdir(), 'bench-prof-'));
const storage = await freshStorage(values.engine as Engine, 'bench_profile');
const profileFile = join(dir, 'server.cpuprofile');
const preload = new URL('./lib/cpu-profile-preload.mjs', import.meta.url).pathname;
const service = await startService(storage, Number(values.port), {
  NODE_OPTIONS: `--import ${preload} ${values['node-options']}`.trim(),
  CPU_PROFILE_FILE: profileFile,
});
const contacts = Number(values.size);
try {
  const tenant = await createTenant(service.url);
  const toggleProfiler = () => process.kill(service.pid, 'SIGUSR2');
  if (values.phase === 'import') toggleProfiler();
  const imported = await runImport(service, tenant, { contacts, messagesPerConversation: Number(values.messages) });
  process.stdout.write(
    `import: ${imported.records} records, ${Math.round(imported.recordsPerSec)}/s, peak RSS ${Math.round(imported.peakRssMb)} MB\n`,
  );
  if (values.phase !== 'import') toggleProfiler();
  const random = rng(3);
  const path = () => `${LOOKUP_ROUTES[values.route as LookupRoute]}?phone=${randomQueryPhone(contacts, random)}`;
  const before = schedulerNs(service.pid);
  const result =
    values.phase === 'import'
      ? undefined
      : await load({
          url: service.url,
          path,
          headers: { 'x-api-key': tenant.apiKey },
          connections: Number(values.connections),
          durationSec: Number(values.duration),
        });
  if (result) {
    const after = schedulerNs(service.pid);
    const perRequest = (ns: number) => (ns / 1000 / result.requests).toFixed(0);
    process.stdout.write(
      `${result.requests} requests, ${Math.round(result.requestsPerSec)}/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms\n`,
    );
    process.stdout.write(
      `service main thread, µs per request: ${perRequest(after.onCpu - before.onCpu)} on a core, ${perRequest(after.waiting - before.waiting)} waiting for one\n`,
    );
  }
  toggleProfiler();
  for (let i = 0; i < 100 && !existsSync(profileFile); i++) await new Promise((r) => setTimeout(r, 100));
} finally {
  await service.stop();
  await storage.dispose();
}

const file = profileFile;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
let total = 0;
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  total += us;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url.replace(/^file:\/\//, '').replace(/^.*\/work\/main\//, '');
  const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  const pkg =
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where)?.[1] ??
    (where.startsWith('src/')
      ? 'src (service)'
      : where.startsWith('node:')
        ? 'node core'
        : functionName.startsWith('(')
          ? functionName
          : where || 'native');
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
}
const print = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    process.stdout.write(
      `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}\n`,
    );
  }
};
process.stdout.write(`profile: ${file}\n`);
print('self time by package', byPackage);
print('self time by function', byFunction);
