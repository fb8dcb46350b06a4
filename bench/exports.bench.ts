/**
 * Export benchmark (issue 5): loads N messages into one business through the import endpoint, then
 *  1. walks one 31-day window of GET /external/v2/messages with limit=500 over HTTP (rate limits
 *     raised by configuration): messages/s, page latency p50/p95/max, server RSS along the walk;
 *  2. runs the same keyset range straight on the database, the service stopped, in two forms: as rows
 *     decoded by the driver (the comparison baseline) and as the endpoint's JSON records
 *     (exportsRepository.messagePage, the page joined by the database): messages/s, and the HTTP walk's share of each;
 *  3. restarts the service with the contract's limits (120 pages a minute) and lets the sync tool
 *     copy `--sync-pages` pages: pages per minute against the 120 ceiling, and any 429 met.
 * CPU per page of each process involved in 1 and 2 (service, PostgreSQL backends, this process) comes
 * from /proc, so a machine shared with other work still gives comparable costs; load average alongside.
 *
 *   npx tsx bench/exports.bench.ts [--engine postgres|pglite] [--messages 1000000]
 *     [--sync-pages 240 (0: no sync part)] [--port 3950]
 *     [--db bench_exports (PostgreSQL database, or PGlite directory prefix)]
 *
 * Prints a Markdown section for docs/PERFORMANCE.md and writes the raw figures to /tmp.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { openDatabase } from '../src/db/database.ts';
import { exportsRepository } from '../src/modules/exports/exports.repository.ts';
import { ndjsonSink } from '../src/sync/sinks.ts';
import { runSync } from '../src/sync/sync.ts';
import { runImport } from './import.bench.ts';
import { postgresBackends, RssSampler } from './lib/measure.ts';
import { createTenant, freshStorage, startService, type Engine } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    messages: { type: 'string', default: '1000000' },
    'sync-pages': { type: 'string', default: '240' },
    port: { type: 'string', default: '3950' },
    db: { type: 'string', default: 'bench_exports' },
  },
});
const engine = values.engine as Engine;
const messages = Number(values.messages);
const contacts = Math.max(1, Math.round(messages / 100));
const port = Number(values.port);
// The generated data set (bench/lib/generate.ts) starts on 2024-01-01 and spans a few hours.
const SINCE = '2024-01-01T00:00:00.000000Z';
const UNTIL = '2024-02-01T00:00:00.000000Z';
const RAISED = { RATE_LIMIT_EXPORTS_PER_MINUTE: '1000000000', RATE_LIMIT_EVENTS_PER_MINUTE: '1000000000' };

const TABLE_HEADER = [
  '| engine | messages | HTTP walk msg/s | raw rows msg/s | raw JSON page msg/s | HTTP share of rows / JSON | page ms p50 / p95 / max',
  ' | server RSS MB by tenth of the walk | HTTP CPU ms/page service + PostgreSQL | raw rows CPU ms/page node + PostgreSQL',
  ' | raw JSON CPU ms/page node + PostgreSQL | load avg before / after | sync pages/min (share of 120) |\n',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
].join('');
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const log = (s: string) => process.stderr.write(s + '\n');

/** utime + stime of a process in clock ticks (10 ms), or undefined when it has ended. */
function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of a changing set of processes (PostgreSQL backends open and close with the pools'
 * connections): polled, so a process that ends during the walk keeps what it used until its last
 * poll, and one that starts during it counts from zero.
 */
class PolledCpu {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pids: () => number[]) {
    this.poll(true);
    this.timer = setInterval(() => this.poll(false), 100);
  }

  private poll(initial: boolean) {
    for (const pid of this.pids()) {
      const ticks = cpuTicks(pid);
      if (ticks === undefined) continue;
      if (!this.first.has(pid)) this.first.set(pid, initial ? ticks : 0);
      this.last.set(pid, ticks);
    }
  }

  seconds(): number {
    this.poll(false);
    clearInterval(this.timer);
    let ticks = 0;
    for (const [pid, first] of this.first) ticks += (this.last.get(pid) ?? first) - first;
    return ticks / 100;
  }
}

/** CPU ms per page: the service (with PGlite, the database too), PostgreSQL's backends, this process. */
function cpuMeters() {
  const service = new PolledCpu(() => (serverPid ? [serverPid] : []));
  const postgres = new PolledCpu(() => (engine === 'postgres' ? postgresBackends(values.db) : []));
  const own = process.cpuUsage();
  return (pages: number) => {
    const ownUsage = process.cpuUsage(own);
    const perPage = (seconds: number) => Math.round((seconds * 1000 * 100) / pages) / 100;
    return {
      serviceMs: perPage(service.seconds()),
      postgresMs: perPage(postgres.seconds()),
      clientMs: perPage((ownUsage.user + ownUsage.system) / 1e6),
    };
  };
}

async function httpWalk(url: string, key: string) {
  const rss = new RssSampler(serverPid).start();
  const cpu = cpuMeters();
  const latencies: number[] = [];
  const rssByTenth: number[] = [];
  let cursor: string | null = null;
  let count = 0;
  const started = performance.now();
  do {
    const q = new URLSearchParams({ since: SINCE, until: UNTIL, limit: '500' });
    if (cursor) q.set('cursor', cursor);
    const t0 = performance.now();
    const res = await request(`${url}/external/v2/messages?${q.toString()}`, { headers: { 'x-api-key': key } });
    const body = (await res.body.json()) as { messages: unknown[]; next_cursor: string | null };
    latencies.push(performance.now() - t0);
    if (res.statusCode !== 200) throw new Error(`walk answered ${res.statusCode}: ${JSON.stringify(body)}`);
    count += body.messages.length;
    while (rssByTenth.length < 10 && count >= (messages * (rssByTenth.length + 1)) / 10)
      rssByTenth.push(Math.round(rss.read() ?? 0));
    cursor = body.next_cursor;
  } while (cursor);
  const seconds = (performance.now() - started) / 1000;
  const cpuPerPage = cpu(latencies.length);
  rss.stop();
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    count,
    pages: latencies.length,
    seconds,
    perSec: count / seconds,
    p50: pct(sorted, 50),
    p95: pct(sorted, 95),
    max: sorted[sorted.length - 1] ?? 0,
    rssByTenth,
    peakRss: rss.peakMb,
    cpuPerPage,
  };
}

/**
 * The walk straight on the database, page after page, 501 records a page (the extra one proves
 * there is more): `rows` decodes the keyset range into rows of the mapper's form (the comparison
 * baseline), `json` runs the endpoint's query (each record as JSON text) and joins the page's text
 * as the service does. Both read the same index range.
 */
async function rawWalk(storageEnv: Record<string, string>, businessId: string, form: 'rows' | 'json') {
  const database = await openDatabase({
    databaseUrl: storageEnv.DATABASE_URL,
    dataDir: storageEnv.DATA_DIR,
    poolSize: 2,
  });
  try {
    const db = database.db;
    let after: { createdAt: string; id: string } | undefined;
    let count = 0;
    let pages = 0;
    let bytes = 0;
    const cpu = cpuMeters();
    const started = performance.now();
    for (;;) {
      pages += 1;
      let served: { id: string; created_at: string }[];
      let more: boolean;
      if (form === 'json') {
        // The endpoint's statement: the page's records joined by the database, as the service reads them.
        const page = await exportsRepository.messagePage(db, businessId, {
          since: SINCE,
          until: UNTIL,
          after,
          limit: 500,
        });
        more = page.more;
        bytes += page.records.length + 2;
        // A page with more after it is full; only the last one is counted record by record.
        const n = page.more ? 500 : (page.records.match(/"conversation_id":/g) ?? []).length;
        served = page.last === null ? [] : [JSON.parse(page.last) as { id: string; created_at: string }];
        count += n;
      } else {
        const rows = await exportsRepository.messageRows(db, businessId, {
          since: SINCE,
          until: UNTIL,
          after,
          limit: 501,
        });
        more = rows.length > 500;
        served = rows.slice(0, 500);
        count += served.length;
      }
      const last = served[served.length - 1];
      if (!more || !last) break;
      after = { createdAt: last.created_at, id: last.id };
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      form,
      count,
      pages,
      seconds,
      perSec: count / seconds,
      cpuPerPage: cpu(pages),
      charsPerPage: Math.round(bytes / pages),
    };
  } finally {
    await database.close();
  }
}

let serverPid = 0;

async function main() {
  const storage = await freshStorage(engine, values.db);
  const dir = mkdtempSync(join(tmpdir(), 'bench-sync-'));
  try {
    let service = await startService(storage, port, RAISED);
    serverPid = service.pid;
    const tenant = await createTenant(service.url);
    log(`importing ${messages} messages (${contacts} contacts) on ${engine}...`);
    const imported = await runImport(service, tenant, {
      contacts,
      messagesPerConversation: Math.round(messages / contacts),
    });
    log(`  ${Math.round(imported.recordsPerSec)} records/s`);
    // A first walk warms the caches as a warehouse's nightly sync would find them; the second is measured.
    await httpWalk(service.url, tenant.apiKey);
    const loadBefore = loadavg()[0];
    const http = await httpWalk(service.url, tenant.apiKey);
    log(
      `  HTTP walk: ${Math.round(http.perSec)} msg/s, p95 ${http.p95.toFixed(1)} ms, CPU ms/page ${JSON.stringify(http.cpuPerPage)}`,
    );
    await service.stop();
    serverPid = 0;
    // PGlite is single-process: the raw walks run with the service stopped, on both engines alike.
    await rawWalk(storage.env, tenant.businessId, 'rows');
    const rows = await rawWalk(storage.env, tenant.businessId, 'rows');
    log(`  raw keyset query, rows: ${Math.round(rows.perSec)} msg/s, CPU ms/page ${JSON.stringify(rows.cpuPerPage)}`);
    await rawWalk(storage.env, tenant.businessId, 'json');
    const json = await rawWalk(storage.env, tenant.businessId, 'json');
    log(
      `  raw keyset query, JSON page: ${Math.round(json.perSec)} msg/s, CPU ms/page ${JSON.stringify(json.cpuPerPage)}, ${json.charsPerPage} chars/page`,
    );
    const loadAfter = loadavg()[0];
    const raw = { rows, json, loadBefore, loadAfter };
    const cpuCell = (processMs: number, postgresMs: number) => `${processMs.toFixed(2)} + ${postgresMs.toFixed(2)}`;
    const row = [
      engine,
      messages.toLocaleString('en'),
      Math.round(http.perSec).toLocaleString('en'),
      Math.round(rows.perSec).toLocaleString('en'),
      Math.round(json.perSec).toLocaleString('en'),
      `${((http.perSec / rows.perSec) * 100).toFixed(0)}% / ${((http.perSec / json.perSec) * 100).toFixed(0)}%`,
      `${http.p50.toFixed(1)} / ${http.p95.toFixed(1)} / ${http.max.toFixed(1)}`,
      http.rssByTenth.join(', '),
      `${cpuCell(http.cpuPerPage.serviceMs, http.cpuPerPage.postgresMs)} (client ${http.cpuPerPage.clientMs.toFixed(2)})`,
      cpuCell(rows.cpuPerPage.clientMs, rows.cpuPerPage.postgresMs),
      cpuCell(json.cpuPerPage.clientMs, json.cpuPerPage.postgresMs),
      `${loadBefore.toFixed(1)} / ${loadAfter.toFixed(1)}`,
    ];
    const table = `| ${row.join(' | ')} |`;

    const syncPages = Number(values['sync-pages']);
    if (syncPages === 0) {
      console.log(TABLE_HEADER);
      console.log(`${table} not run |`);
      writeFileSync(
        join(tmpdir(), `bench-exports-${engine}.json`),
        JSON.stringify({ engine, messages, imported, http, raw, share: http.perSec / rows.perSec }, null, 2),
      );
      return;
    }
    service = await startService(storage, port);
    serverPid = service.pid;
    // A business of its own for the sync, so it starts on fresh rate-limit windows as a nightly job would.
    const syncTenant = await createTenant(service.url);
    await runImport(
      service,
      syncTenant,
      { contacts: Math.ceil((syncPages * 500) / 100), messagesPerConversation: 100 },
      ' (sync data)',
    );
    // The data set's messages are evenly spread: the window that holds syncPages pages.
    const until = new Date(Date.parse(SINCE) + Math.ceil((syncPages * 500) / 100) * 1000 + 1000).toISOString();
    let statuses429 = 0;
    const counting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.status === 429) statuses429++;
      return res;
    };
    const started = performance.now();
    const [synced] = await runSync({
      url: service.url,
      key: syncTenant.apiKey,
      since: SINCE,
      until,
      kinds: ['messages'],
      sink: ndjsonSink(dir),
      fetch: counting,
    });
    const minutes = (performance.now() - started) / 60000;
    await service.stop();
    const sync = {
      pages: synced.pages,
      records: synced.stored,
      minutes,
      pagesPerMinute: synced.pages / minutes,
      share: synced.pages / minutes / 120,
      statuses429,
    };
    log(
      `  sync: ${sync.pagesPerMinute.toFixed(1)} pages/min (${(sync.share * 100).toFixed(1)}% of 120), ${statuses429} x 429`,
    );

    const figures = { engine, messages, imported, http, raw, share: http.perSec / rows.perSec, sync };
    writeFileSync(join(tmpdir(), `bench-exports-${engine}.json`), JSON.stringify(figures, null, 2));
    console.log(TABLE_HEADER);
    console.log(
      `${table} ${sync.pagesPerMinute.toFixed(1)} (${(sync.share * 100).toFixed(1)}%), ${sync.statuses429} x 429 |`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await storage.dispose();
  }
}

await main();
