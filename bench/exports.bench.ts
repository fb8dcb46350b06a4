/**
 * Export benchmark (issue 5): loads N messages into one business through the import endpoint, then
 *  1. walks one 31-day window of GET /external/v2/messages with limit=500 over HTTP (rate limits
 *     raised by configuration): messages/s, page latency p50/p95/max, server RSS along the walk;
 *  2. runs the same keyset query straight on the database (the repository's own query, same
 *     pages): messages/s, and the HTTP walk's share of it;
 *  3. restarts the service with the contract's limits (120 pages a minute) and lets the sync tool
 *     copy `--sync-pages` pages: pages per minute against the 120 ceiling, and any 429 met.
 *
 *   npx tsx bench/exports.bench.ts [--engine postgres|pglite] [--messages 1000000] [--sync-pages 240 (0: no sync part)] [--port 3950]
 *
 * Prints a Markdown section for docs/PERFORMANCE.md and writes the raw figures to /tmp.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { openDatabase } from '../src/db/database.ts';
import { exportsRepository } from '../src/modules/exports/exports.repository.ts';
import { ndjsonSink } from '../src/sync/sinks.ts';
import { runSync } from '../src/sync/sync.ts';
import { runImport } from './import.bench.ts';
import { RssSampler } from './lib/measure.ts';
import { createTenant, freshStorage, startService, type Engine } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    messages: { type: 'string', default: '1000000' },
    'sync-pages': { type: 'string', default: '240' },
    port: { type: 'string', default: '3950' },
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

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const log = (s: string) => process.stderr.write(s + '\n');

async function httpWalk(url: string, key: string) {
  const rss = new RssSampler(serverPid).start();
  const latencies: number[] = [];
  const rssByTenth: number[] = [];
  let cursor: string | null = null;
  let count = 0;
  const started = performance.now();
  do {
    const q = new URLSearchParams({ since: SINCE, until: UNTIL, limit: '500' });
    if (cursor) q.set('cursor', cursor);
    const t0 = performance.now();
    const res = await request(`${url}/external/v2/messages?${q}`, { headers: { 'x-api-key': key } });
    const body = (await res.body.json()) as { messages: unknown[]; next_cursor: string | null };
    latencies.push(performance.now() - t0);
    if (res.statusCode !== 200) throw new Error(`walk answered ${res.statusCode}: ${JSON.stringify(body)}`);
    count += body.messages.length;
    while (rssByTenth.length < 10 && count >= (messages * (rssByTenth.length + 1)) / 10) rssByTenth.push(Math.round(rss.read() ?? 0));
    cursor = body.next_cursor;
  } while (cursor);
  const seconds = (performance.now() - started) / 1000;
  rss.stop();
  const sorted = [...latencies].sort((a, b) => a - b);
  return { count, pages: latencies.length, seconds, perSec: count / seconds, p50: pct(sorted, 50), p95: pct(sorted, 95), max: sorted[sorted.length - 1] ?? 0, rssByTenth, peakRss: rss.peakMb };
}

async function rawWalk(storageEnv: Record<string, string>, businessId: string) {
  const database = await openDatabase({ databaseUrl: storageEnv.DATABASE_URL, dataDir: storageEnv.DATA_DIR, poolSize: 2 });
  try {
    let after: { createdAt: string; id: string } | undefined;
    let count = 0;
    const started = performance.now();
    for (;;) {
      const rows = await exportsRepository.messagesPage(database.db, businessId, { since: SINCE, until: UNTIL, after, limit: 501 });
      const page = rows.slice(0, 500);
      count += page.length;
      if (rows.length <= 500) break;
      const last = page[page.length - 1]!;
      after = { createdAt: last.created_at, id: last.id };
    }
    const seconds = (performance.now() - started) / 1000;
    return { count, seconds, perSec: count / seconds };
  } finally {
    await database.close();
  }
}

let serverPid = 0;

async function main() {
  const storage = await freshStorage(engine, 'bench_exports');
  const dir = mkdtempSync(join(tmpdir(), 'bench-sync-'));
  try {
    let service = await startService(storage, port, RAISED);
    serverPid = service.pid;
    const tenant = await createTenant(service.url);
    log(`importing ${messages} messages (${contacts} contacts) on ${engine}...`);
    const imported = await runImport(service, tenant, { contacts, messagesPerConversation: Math.round(messages / contacts) });
    log(`  ${Math.round(imported.recordsPerSec)} records/s`);
    // A first walk warms the caches as a warehouse's nightly sync would find them; the second is measured.
    await httpWalk(service.url, tenant.apiKey);
    const http = await httpWalk(service.url, tenant.apiKey);
    log(`  HTTP walk: ${Math.round(http.perSec)} msg/s, p95 ${http.p95.toFixed(1)} ms`);
    await service.stop();
    // PGlite is single-process: the raw query runs with the service stopped, on both engines alike.
    await rawWalk(storage.env, tenant.businessId);
    const raw = await rawWalk(storage.env, tenant.businessId);
    log(`  raw keyset query: ${Math.round(raw.perSec)} msg/s`);

    const syncPages = Number(values['sync-pages']);
    if (syncPages === 0) {
      console.log(`| ${engine} | ${messages.toLocaleString('en')} | ${Math.round(http.perSec).toLocaleString('en')} | ${Math.round(raw.perSec).toLocaleString('en')} | ${((http.perSec / raw.perSec) * 100).toFixed(0)}% | ${http.p50.toFixed(1)} / ${http.p95.toFixed(1)} / ${http.max.toFixed(1)} | ${http.rssByTenth.join(', ')} | not run |`);
      writeFileSync(join(tmpdir(), `bench-exports-${engine}.json`), JSON.stringify({ engine, messages, imported, http, raw, share: http.perSec / raw.perSec }, null, 2));
      return;
    }
    service = await startService(storage, port);
    serverPid = service.pid;
    // A business of its own for the sync, so it starts on fresh rate-limit windows as a nightly job would.
    const syncTenant = await createTenant(service.url);
    await runImport(service, syncTenant, { contacts: Math.ceil((syncPages * 500) / 100), messagesPerConversation: 100 }, ' (sync data)');
    // The data set's messages are evenly spread: the window that holds syncPages pages.
    const until = new Date(Date.parse(SINCE) + Math.ceil((syncPages * 500) / 100) * 1000 + 1000).toISOString();
    let statuses429 = 0;
    const counting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.status === 429) statuses429++;
      return res;
    };
    const started = performance.now();
    const [synced] = await runSync({ url: service.url, key: syncTenant.apiKey, since: SINCE, until, kinds: ['messages'], sink: ndjsonSink(dir), fetch: counting });
    const minutes = (performance.now() - started) / 60000;
    await service.stop();
    const sync = { pages: synced!.pages, records: synced!.stored, minutes, pagesPerMinute: synced!.pages / minutes, share: synced!.pages / minutes / 120, statuses429 };
    log(`  sync: ${sync.pagesPerMinute.toFixed(1)} pages/min (${(sync.share * 100).toFixed(1)}% of 120), ${statuses429} x 429`);

    const figures = { engine, messages, imported, http, raw, share: http.perSec / raw.perSec, sync };
    writeFileSync(join(tmpdir(), `bench-exports-${engine}.json`), JSON.stringify(figures, null, 2));
    console.log(`| ${engine} | ${messages.toLocaleString('en')} | ${Math.round(http.perSec).toLocaleString('en')} | ${Math.round(raw.perSec).toLocaleString('en')} | ${((http.perSec / raw.perSec) * 100).toFixed(0)}% | ${http.p50.toFixed(1)} / ${http.p95.toFixed(1)} / ${http.max.toFixed(1)} | ${http.rssByTenth.join(', ')} | ${sync.pagesPerMinute.toFixed(1)} (${(sync.share * 100).toFixed(1)}%), ${sync.statuses429} x 429 |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await storage.dispose();
  }
}

await main();
