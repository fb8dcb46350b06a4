/**
 * Messaging benchmarks, on PostgreSQL (figures in docs/PERFORMANCE.md#messaging):
 *
 * - inbound: signed WhatsApp notifications (Meta's shape, one text message each, senders drawn from
 *   a pool of phones) posted to /channels/whatsapp/webhook at a fixed rate (open loop); accept
 *   latency from each request's due time; afterwards the messages table must hold exactly the
 *   accepted provider message ids (and the contacts / conversations / counters must add up).
 * - send-fast: a channel paced at 1000/s; POST /external/v2/messages/send at a fixed rate to
 *   senders of the inbound part (24-hour window open), after a warm-up of --send-warmup seconds at
 *   the same rate on the same connections; the rate at which the fake Graph API receives the
 *   sends, per 1-s window.
 *   With --accept-only the fake holds every send request for a minute instead of answering, so
 *   the worker's slots stay taken and the CPU measured is that of accepting alone (nothing is
 *   waited for afterwards).
 * - send-paced: a channel with the default pace (80/s); a burst of sends; the most the fake
 *   receives for that number in any 1-s window (fixed and sliding).
 *
 *   npx tsx bench/messaging.bench.ts [--only inbound,send-fast,send-paced] [--rate 1000] [--duration 60]
 *     [--warmup 3] [--phones 5000] [--send-rate 1000] [--send-duration 20] [--send-warmup 2] [--paced 1200]
 *     [--accept-only]
 *     [--connections 128] [--port 4750] [--db bench_messaging] [--profile inbound|send-fast] [--log-statements]
 *
 * PG_URL (default postgres://postgres@127.0.0.1:5432); the database --db is dropped and created anew.
 * BENCH_AUTO_EXPLAIN=<ms>: the plan (with actual times, triggers and nested statements) of every
 * statement slower than that goes to the PostgreSQL log (auto_explain), to see where a batch's time goes.
 */
import { writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startFakeGraphApi } from '../test/helpers/fake-graph-api.ts';
import { phoneOf, rng } from './lib/generate.ts';
import { CpuMeter, postgresBackends } from './lib/measure.ts';
import { arrivalWindows, openLoop, type OpenLoopResult } from './lib/messaging-load.ts';
import {
  checkInbound,
  createChannel,
  inboundRequests,
  outboundStatuses,
  recordArrivals,
  runSql,
  sendRequests,
  setPace,
} from './lib/messaging-setup.ts';
import { createTenant, freshStorage, startService } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'inbound,send-fast,send-paced' },
    rate: { type: 'string', default: '1000' },
    duration: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '3' },
    phones: { type: 'string', default: '5000' },
    'send-rate': { type: 'string', default: '1000' },
    'send-duration': { type: 'string', default: '20' },
    'send-warmup': { type: 'string', default: '2' },
    paced: { type: 'string', default: '1200' },
    connections: { type: 'string', default: '128' },
    port: { type: 'string', default: '4750' },
    db: { type: 'string', default: 'bench_messaging' },
    /** CPU profile of the service during one part (inbound or send-fast), written to PROFILE_FILE. */
    profile: { type: 'string', default: '' },
    /** Every statement of the service with its duration in the PostgreSQL log (to see where time goes). */
    'log-statements': { type: 'boolean', default: false },
    /** send-fast: the fake holds the worker's calls, so the CPU measured is that of accepting alone. */
    'accept-only': { type: 'boolean', default: false },
  },
});
const only = new Set(values.only.split(','));
const rate = Number(values.rate);
const phones = Array.from({ length: Number(values.phones) }, (_, i) => phoneOf(i));
const random = rng(3);
const pick = (n: number) => Array.from({ length: n }, () => phones[Math.floor(random() * phones.length)]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
const fmt = (n: number, d = 1) => n.toFixed(d);
/** The outbound statuses once none is PENDING any more (the SENT marks follow the last arrival), or after 10 s. */
async function settledStatuses(
  databaseUrl: string,
  businessId: string,
  channelId: string,
): Promise<Record<string, number>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const statuses = await outboundStatuses(databaseUrl, businessId, channelId);
    if (!statuses.PENDING || Date.now() > deadline) return statuses;
    await sleep(200);
  }
}
const lat = (r: OpenLoopResult) => `${fmt(r.fromDue.p50)} / ${fmt(r.fromDue.p99)} / ${fmt(r.fromDue.max, 0)}`;

/** With --profile: the service's CPU profile of the measured part of the first run (SIGUSR2 starts and stops it). */
const PROFILE_FILE = '/tmp/messaging-bench.cpuprofile';
const toggleProfile = (part: string) => values.profile === part && process.kill(service.pid, 'SIGUSR2');
const storage = await freshStorage('postgres', values.db);
const databaseUrl = storage.env.DATABASE_URL;
if (values['log-statements'])
  await runSql(databaseUrl, `ALTER DATABASE "${values.db}" SET log_min_duration_statement = 0`);
if (process.env.BENCH_AUTO_EXPLAIN)
  for (const s of [
    'session_preload_libraries = auto_explain',
    'auto_explain.log_min_duration = ' + process.env.BENCH_AUTO_EXPLAIN,
    'auto_explain.log_analyze = on',
    'auto_explain.log_nested_statements = on',
    'auto_explain.log_triggers = on',
  ])
    await runSql(databaseUrl, `ALTER DATABASE "${values.db}" SET ${s}`);
const fake = await startFakeGraphApi();
const arrivals = recordArrivals(fake);
const service = await startService(
  storage,
  Number(values.port),
  values.profile
    ? {
        NODE_OPTIONS: `--import ${new URL('./lib/cpu-profile-preload.mjs', import.meta.url).pathname}`,
        CPU_PROFILE_FILE: PROFILE_FILE,
      }
    : {},
);
const report: Record<string, unknown> = { startedAt: new Date().toISOString() };
const lines: string[] = [];
/** CPU of the service process and of the PostgreSQL backends of the bench database, measured apart. */
const cpu = () => {
  const server = new CpuMeter(() => [service.pid]).start();
  const database = new CpuMeter(() => postgresBackends(values.db)).start();
  return {
    seconds: () => server.seconds() + database.seconds(),
    split: () => `${fmt(server.seconds(), 1)} + ${fmt(database.seconds(), 1)}`,
  };
};

try {
  report.options = values;
  const tenant = await createTenant(service.url);
  const fast = await createChannel(service.url, tenant.businessId, fake, 1);
  const paced = await createChannel(service.url, tenant.businessId, fake, 2);
  let senders: string[] = [];

  if (only.has('inbound') || only.has('send-fast')) {
    const seconds = only.has('inbound') ? Number(values.duration) : 0;
    const warm = inboundRequests(fast, pick(rate * Number(values.warmup)));
    const requests = inboundRequests(fast, pick(Math.round(rate * seconds)));
    // One set of connections for the warm-up and the run, so the run does not start by opening them.
    const pool = new Pool(service.url, {
      connections: Number(values.connections),
      pipelining: 1,
      keepAliveTimeout: 30_000,
    });
    const warmResult = await openLoop(service.url, warm, rate, { pool });
    const loadBefore = load();
    const meter = cpu();
    const bench = process.cpuUsage();
    toggleProfile('inbound');
    const result = requests.length > 0 ? await openLoop(service.url, requests, rate, { pool }) : warmResult;
    await pool.close();
    toggleProfile('inbound');
    const cpuSec = meter.seconds();
    const cpuSplit = meter.split();
    const benchCpuSec = (process.cpuUsage(bench).user + process.cpuUsage(bench).system) / 1e6;
    const loadAfter = load();
    await sleep(500);
    const all = [...warmResult.accepted, ...(requests.length > 0 ? result.accepted : [])];
    const stored = await checkInbound(databaseUrl, tenant.businessId, fast.id, all);
    const fromOf = new Map([...warm, ...requests].map((r) => [r.id, r.from]));
    senders = [...new Set(all.map((id) => fromOf.get(id)!))];
    if (only.has('inbound')) {
      const distinct = new Set(requests.map((r) => r.from)).size;
      report.inbound = {
        rate,
        seconds,
        result: { ...result, accepted: result.accepted.length },
        warm: { accepted: warmResult.accepted.length, p99: warmResult.fromDue.p99 },
        stored,
        cpuSec,
        cpuSplit,
        benchCpuSec,
        loadBefore,
        loadAfter,
        distinctSenders: distinct,
      };
      lines.push(
        `Inbound: ${result.planned} notifications at ${rate}/s for ${seconds} s (after ${warm.length} of warm-up), ${distinct} distinct senders; load average before ${loadBefore}, after ${loadAfter}`,
        '',
        '| offered/s | accepted | accepted/s | p50 / p99 / max ms (from due) | p99 ms (from send) | client lag max ms | non-2xx / errors | stored = accepted | contacts / conversations | CPU ms/msg service+PG (CPU s service + PG) | bench CPU s |',
        '|---:|---:|---:|---|---:|---:|---|---|---|---:|---:|',
        `| ${rate} | ${result.accepted.length} | ${fmt(result.acceptedPerSec, 0)} | ${lat(result)} | ${fmt(result.fromSend.p99)} | ${fmt(result.maxClientLagMs, 0)} | ${result.rejected.length} / ${result.failed.length} | ${stored.messages} stored, ${stored.missing} missing, ${stored.unexpected} unexpected, ${stored.duplicates} dup, Σmessage_count ${stored.messageCountSum} | ${stored.contacts} / ${stored.conversations} | ${fmt((cpuSec * 1000) / Math.max(1, result.accepted.length), 2)} (${cpuSplit}) | ${fmt(benchCpuSec)} |`,
        '',
      );
      lines.push(`p99 ms per second of the run: ${result.perSecond.map((p) => fmt(p.p99, 0)).join(' ')}`, '');
      if (result.rejected.length > 0) lines.push(`first rejection: ${JSON.stringify(result.rejected[0])}`, '');
      if (result.failed.length > 0) lines.push(`first failure: ${JSON.stringify(result.failed[0])}`, '');
    }
  }

  if (only.has('send-fast')) {
    const acceptOnly = values['accept-only'];
    await setPace(service.url, tenant.businessId, fast.id, 1000);
    if (acceptOnly) fake.setDelay(60_000);
    const sendRate = Number(values['send-rate']);
    const recipients = (n: number) => Array.from({ length: n }, () => senders[Math.floor(random() * senders.length)]);
    const requests = sendRequests(fast, tenant.apiKey, recipients(sendRate * Number(values['send-duration'])), 'fast');
    const path = `/${fake.baseUrl.split('/').pop()}/${fast.phoneNumberId}/messages`;
    // As for inbound: a warm-up at the same rate on the same connections, delivered before the run,
    // so the run measures the service warm (compiled code, open connections, analysed tables).
    const pool = new Pool(service.url, {
      connections: Number(values.connections),
      pipelining: 1,
      keepAliveTimeout: 30_000,
    });
    const warmed = arrivals.length;
    const warm = await openLoop(
      service.url,
      sendRequests(fast, tenant.apiKey, recipients(sendRate * Number(values['send-warmup'])), 'fast-warm'),
      sendRate,
      { pool },
    );
    for (let i = 0; i < 100 && !acceptOnly && arrivals.length - warmed < warm.accepted.length; i++) await sleep(100);
    const seen = arrivals.length;
    const loadBefore = load();
    const meter = cpu();
    const bench = process.cpuUsage();
    toggleProfile('send-fast');
    const result = await openLoop(service.url, requests, sendRate, { pool });
    await pool.close();
    const acceptSec = meter.seconds();
    const acceptSplit = meter.split();
    const deadline = acceptOnly ? Date.now() : Date.now() + 120_000;
    const mine = () => arrivals.slice(seen).filter((a) => a.path === path);
    while (mine().length < result.accepted.length && Date.now() < deadline) await sleep(200);
    toggleProfile('send-fast');
    const cpuSec = meter.seconds();
    const cpuSplit = meter.split();
    const benchCpuSec = (process.cpuUsage(bench).user + process.cpuUsage(bench).system) / 1e6;
    const loadAfter = load();
    const times = mine().map((a) => a.t);
    const windows = arrivalWindows(times);
    const inner = windows.perSecond.slice(1, -1).sort((a, b) => a - b);
    const median = inner[Math.floor(inner.length / 2)] ?? NaN;
    const spanSec = times.length > 1 ? (Math.max(...times) - Math.min(...times)) / 1000 : NaN;
    const statuses = acceptOnly ? {} : await settledStatuses(databaseUrl, tenant.businessId, fast.id);
    report.sendFast = {
      sendRate,
      acceptOnly,
      result: { ...result, accepted: result.accepted.length },
      delivered: times.length,
      windows,
      median,
      spanSec,
      statuses,
      acceptSec,
      acceptSplit,
      cpuSec,
      cpuSplit,
      benchCpuSec,
      loadBefore,
      loadAfter,
    };
    const perSend = (sec: number, n: number) => fmt((sec * 1000) / Math.max(1, n), 2);
    lines.push(
      `Sends, channel paced at 1000/s${acceptOnly ? ', fake holding every call (accept only)' : ''}: ${requests.length} sends offered at ${sendRate}/s (after ${warm.accepted.length} of warm-up); load average before ${loadBefore}, after ${loadAfter}`,
      '',
      '| offered/s | accepted | accepted/s | accept p50 / p99 / max ms | non-2xx / errors | delivered to fake | delivered/s (first→last) | per 1-s window: median / min / max (inner windows) | statuses | CPU ms/send while accepting service+PG (CPU s) | CPU ms/send accept + delivery service+PG (CPU s) | bench CPU s (load and fake Graph API) |',
      '|---:|---:|---:|---|---|---:|---:|---|---|---:|---:|---:|',
      `| ${sendRate} | ${result.accepted.length} | ${fmt(result.acceptedPerSec, 0)} | ${lat(result)} | ${result.rejected.length} / ${result.failed.length} | ${times.length} | ${fmt(times.length / spanSec, 0)} | ${median} / ${inner[0] ?? NaN} / ${inner[inner.length - 1] ?? NaN} | ${JSON.stringify(statuses)} | ${perSend(acceptSec, result.accepted.length)} (${acceptSplit}) | ${acceptOnly ? '–' : `${perSend(cpuSec, times.length)} (${cpuSplit})`} | ${fmt(benchCpuSec)} |`,
      '',
      `windows: ${windows.perSecond.join(' ')}`,
      '',
    );
    if (result.rejected.length > 0) lines.push(`first rejection: ${JSON.stringify(result.rejected[0])}`, '');
  }

  if (only.has('send-paced')) {
    if (senders.length === 0) {
      const seed = inboundRequests(paced, pick(Math.min(phones.length, 500)));
      const r = await openLoop(service.url, seed, 200);
      const ok = new Set(r.accepted);
      senders = [...new Set(seed.filter((q) => ok.has(q.id)).map((q) => q.from))];
    } else {
      // The 24-hour window is per channel: the paced channel's recipients write to it first.
      const seed = inboundRequests(paced, senders.slice(0, 500));
      await openLoop(service.url, seed, 300);
      senders = senders.slice(0, 500);
    }
    const count = Number(values.paced);
    const requests = sendRequests(
      paced,
      tenant.apiKey,
      Array.from({ length: count }, () => senders[Math.floor(random() * senders.length)]),
      'paced',
    );
    const path = `/${fake.baseUrl.split('/').pop()}/${paced.phoneNumberId}/messages`;
    const seen = arrivals.length;
    const loadBefore = load();
    const result = await openLoop(service.url, requests, 400);
    const mine = () => arrivals.slice(seen).filter((a) => a.path === path);
    const deadline = Date.now() + (count / 80) * 1000 + 60_000;
    while (mine().length < result.accepted.length && Date.now() < deadline) await sleep(200);
    const times = mine().map((a) => a.t);
    const windows = arrivalWindows(times);
    const spanSec = (Math.max(...times) - Math.min(...times)) / 1000;
    const statuses = await settledStatuses(databaseUrl, tenant.businessId, paced.id);
    report.sendPaced = {
      result: { ...result, accepted: result.accepted.length },
      delivered: times.length,
      windows,
      spanSec,
      statuses,
      loadBefore,
      loadAfter: load(),
    };
    lines.push(
      `Sends, default pace (80/s): ${count} sends offered at 400/s; load average before ${loadBefore}`,
      '',
      '| accepted | delivered to fake | delivered/s (first→last) | max in a fixed 1-s window | max in any sliding 1-s window | ≤ 80 | statuses |',
      '|---:|---:|---:|---:|---:|---|---|',
      `| ${result.accepted.length} | ${times.length} | ${fmt(times.length / spanSec)} | ${windows.maxFixed} | ${windows.maxSliding} | ${times.length === 0 ? '(nothing sent)' : windows.maxSliding <= 80 ? 'met' : '**missed**'} | ${JSON.stringify(statuses)} |`,
      '',
      `windows: ${windows.perSecond.join(' ')}`,
      '',
    );
  }
} finally {
  await service.stop();
  await fake.close();
  await storage.dispose();
}

const file = `/tmp/messaging-bench-${Date.now()}.json`;
writeFileSync(file, JSON.stringify(report, null, 2));
console.log(lines.join('\n'));
console.log(`raw figures: ${file}`);
