/**
 * Many server processes on one PostgreSQL (figures in docs/PERFORMANCE.md#many-processes-on-one-postgresql):
 * for 1, 2 and 4 processes (`npm start`'s command line each, on ports --port, --port + 1, ...) over
 * one fresh database,
 *
 * - idle: PostgreSQL's CPU over 5 s with the processes doing nothing (their workers' polls);
 * - inbound: signed WhatsApp notifications (one text message each) posted by --concurrency clients
 *   spread evenly over the processes, each posting its next as soon as the last is answered, for
 *   --duration seconds: messages stored per second, answer latency, and PostgreSQL's CPU per message
 *   (its backends' utime + stime from /proc, before and after);
 * - sends: POST /external/v2/messages/send the same way to the inbound senders, on a channel paced at
 *   1 000/s (its turns shared by every process), then until the fake Graph API has every one: sends
 *   accepted and delivered per second, PostgreSQL's CPU per send, and the contention: pg_stat_activity
 *   sampled every 20 ms, the outbox claims running (`SKIP LOCKED`), the sessions active and those
 *   waiting on a lock, with the statements that wait most (during the inbound part too).
 *
 *   npx tsx bench/many-processes.bench.ts [--processes 1,2,4] [--duration 10] [--concurrency 32]
 *     [--port 4850] [--db bench_many] [--redis redis://127.0.0.1:6379]
 *
 * First, the cost of a channel's turn in the shared pace (channel-pace.store.ts): --turns turns taken
 * one after another in `channel_paces` (and in Redis with --redis), their median round trip and, for
 * PostgreSQL, its backends' CPU per turn.
 *
 * PG_URL (default postgres://postgres@127.0.0.1:5432); the database --db is dropped and created anew
 * for each count of processes. The load average is printed with each figure: on a shared machine it
 * says how much of the cores the figures had.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { Redis } from 'ioredis';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { databasePaceStore, redisPaceStore, type ChannelPaceStore } from '../src/modules/sending/channel-pace.store.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../test/helpers/fake-graph-api.ts';
import { phoneOf } from './lib/generate.ts';
import { CpuMeter, postgresBackends } from './lib/measure.ts';
import { percentiles, type PlannedRequest } from './lib/messaging-load.ts';
import { createChannel, inboundRequests, sendRequests, setPace } from './lib/messaging-setup.ts';
import { createTenant, freshStorage, startService, type RunningProcess } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '1,2,4' },
    duration: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '32' },
    port: { type: 'string', default: '4850' },
    db: { type: 'string', default: 'bench_many' },
    redis: { type: 'string' },
    turns: { type: 'string', default: '2000' },
  },
});
const durationMs = Number(values.duration) * 1000;
const concurrency = Number(values.concurrency);

/** Requests from `next()` posted by `concurrency` clients spread over the processes, for `ms`. */
async function closedLoop(services: RunningProcess[], next: (i: number) => PlannedRequest, ms: number) {
  const pools = services.map((s) => new Pool(s.url, { connections: Math.ceil(concurrency / services.length) }));
  const latencies: number[] = [];
  const accepted: string[] = [];
  let failures = 0;
  let issued = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      const pool = pools[client % pools.length];
      while (performance.now() - t0 < ms) {
        const req = next(issued++);
        const start = performance.now();
        try {
          const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
          const text = await res.body.text();
          if (res.statusCode >= 200 && res.statusCode < 300) accepted.push(JSON.parse(text)?.message?.uuid ?? req.id);
          else failures++;
        } catch {
          failures++;
        }
        latencies.push(performance.now() - start);
      }
    }),
  );
  const wallSec = (performance.now() - t0) / 1000;
  await Promise.all(pools.map((p) => p.close()));
  return { accepted, failures, wallSec, perSec: accepted.length / wallSec, latency: percentiles(latencies) };
}

/**
 * Samples the database's active sessions every 20 ms until stopped: the outbox claims running
 * (`SKIP LOCKED`), and the sessions waiting on a lock, by the start of their statement.
 */
function lockSampler(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  let samples = 0;
  let claims = 0;
  let active = 0;
  const waiting = new Map<string, number>();
  let stopped = false;
  const done = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query<{ wait: string | null; query: string }>(
        `select wait_event_type as wait, query from pg_stat_activity
          where state = 'active' and datname = current_database() and pid <> pg_backend_pid()`,
      );
      samples++;
      active += rows.length;
      for (const row of rows) {
        if (/skip locked/i.test(row.query) && /outbox/i.test(row.query)) claims++;
        if (row.wait !== 'Lock') continue;
        const statement = row.query.replace(/\s+/g, ' ').trim().slice(0, 70);
        waiting.set(statement, (waiting.get(statement) ?? 0) + 1);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await client.end();
  })();
  return {
    async stop() {
      stopped = true;
      await done;
      const waits = [...waiting.values()].reduce((a, b) => a + b, 0);
      const top = [...waiting.entries()].sort((a, b) => b[1] - a[1]).slice(0, 2);
      return {
        meanActive: active / Math.max(1, samples),
        meanClaims: claims / Math.max(1, samples),
        meanWaitingOnLock: waits / Math.max(1, samples),
        top: top.map(([statement, n]) => `${(n / Math.max(1, samples)).toFixed(2)} ${statement}`),
      };
    },
  };
}

async function run(processes: number, graph: FakeGraphApi) {
  const storage = await freshStorage('postgres', values.db);
  const env = { LOG_LEVEL: 'warn', ...(values.redis ? { REDIS_URL: values.redis } : {}) };
  const services: RunningProcess[] = [];
  try {
    for (let i = 0; i < processes; i++) services.push(await startService(storage, Number(values.port) + i, env));
    const tenant = await createTenant(services[0].url);
    const channel = await createChannel(services[0].url, tenant.businessId, graph, processes);
    await setPace(services[0].url, tenant.businessId, channel.id, 1000);
    const backends = () => postgresBackends(values.db);

    // Idle: what the processes' workers cost PostgreSQL with nothing to do (their polls).
    const idleCpu = new CpuMeter(backends).start();
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const idlePgMsPerSec = (idleCpu.seconds() * 1000) / 5;

    // Inbound: a new sender every 4 messages.
    const senders = (i: number) => phoneOf(1_000_000 + Math.floor(i / 4));
    const inboundCpu = new CpuMeter(backends).start();
    const inboundLocks = lockSampler(storage.env.DATABASE_URL);
    const load1 = loadavg()[0];
    const inbound = await closedLoop(services, (i) => inboundRequests(channel, [senders(i)])[0], durationMs);
    const inboundPgSec = inboundCpu.seconds();
    const inboundWaits = await inboundLocks.stop();

    // Sends to the inbound senders (their window is open), then until the fake has them all.
    graph.reset();
    const arrivals: number[] = [];
    const push = graph.requests.push.bind(graph.requests);
    graph.requests.push = (...items) => {
      for (let k = 0; k < items.length; k++) arrivals.push(performance.now());
      return push(...items);
    };
    const recipients = Math.max(1, Math.floor(inbound.accepted.length / 4));
    const sendCpu = new CpuMeter(backends).start();
    const sendLocks = lockSampler(storage.env.DATABASE_URL);
    const load2 = loadavg()[0];
    const sends = await closedLoop(
      services,
      (i) => sendRequests(channel, tenant.apiKey, [`+${phoneOf(1_000_000 + (i % recipients))}`], `s${i}`)[0],
      durationMs,
    );
    const deadline = performance.now() + 120_000;
    while (arrivals.length < sends.accepted.length && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const sendWaits = await sendLocks.stop();
    const sendPgSec = sendCpu.seconds();
    const deliveredSec = (arrivals.at(-1)! - arrivals[0]) / 1000;
    const duplicates = new Set(
      graph.requests.map((r) => (r.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data),
    );
    return {
      processes,
      load: [load1, load2].map((l) => l.toFixed(1)).join(' / '),
      idlePgCpuMsPerSec: idlePgMsPerSec.toFixed(1),
      inbound: {
        perSec: inbound.perSec.toFixed(0),
        p50: inbound.latency.p50.toFixed(1),
        p99: inbound.latency.p99.toFixed(1),
        failures: inbound.failures,
        pgCpuMsPerMessage: ((inboundPgSec * 1000) / inbound.accepted.length).toFixed(2),
        sessionsActive: inboundWaits.meanActive.toFixed(2),
        waitingOnLock: inboundWaits.meanWaitingOnLock.toFixed(2),
        topWaits: inboundWaits.top,
      },
      sends: {
        acceptedPerSec: sends.perSec.toFixed(0),
        deliveredPerSec: (arrivals.length / deliveredSec).toFixed(0),
        delivered: `${arrivals.length}/${sends.accepted.length}`,
        repeated: graph.requests.length - duplicates.size,
        pgCpuMsPerSend: ((sendPgSec * 1000) / sends.accepted.length).toFixed(2),
        claimsRunning: sendWaits.meanClaims.toFixed(2),
        sessionsActive: sendWaits.meanActive.toFixed(2),
        waitingOnLock: sendWaits.meanWaitingOnLock.toFixed(2),
        topWaits: sendWaits.top,
      },
    };
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await storage.dispose();
  }
}

/** `count` turns on one channel taken one after another: median round trip (ms) and PostgreSQL CPU (µs) per turn. */
async function paceTurns(store: ChannelPaceStore, count: number, database?: string) {
  const channel = { businessId: '00000000-0000-7000-8000-000000000001', id: '00000000-0000-7000-8000-000000000002' };
  const times: number[] = [];
  const cpu = new CpuMeter(() => (database ? postgresBackends(database) : [])).start();
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    // A pace no caller reaches: every turn is taken at once, none waited for.
    await store.take(channel, 0.001, 1, 1000);
    times.push(performance.now() - t0);
  }
  const pgUs = (cpu.seconds() * 1e6) / count;
  return {
    medianMs: percentiles(times).p50.toFixed(2),
    p99Ms: percentiles(times).p99.toFixed(2),
    pgCpuUsPerTurn: pgUs.toFixed(0),
  };
}

{
  const storage = await freshStorage('postgres', values.db);
  const database = await openDatabase({ databaseUrl: storage.env.DATABASE_URL, poolSize: 1 });
  await migrateToLatest(database.db);
  const turns = Number(values.turns);
  console.log(
    JSON.stringify({
      pace: 'postgres',
      load: loadavg()[0].toFixed(1),
      ...(await paceTurns(databasePaceStore(database.db), turns, values.db)),
    }),
  );
  await database.close();
  if (values.redis) {
    const store = redisPaceStore(new Redis(values.redis));
    console.log(JSON.stringify({ pace: 'redis', load: loadavg()[0].toFixed(1), ...(await paceTurns(store, turns)) }));
    await store.close();
  }
}

const graph = await startFakeGraphApi({ accessToken: 'bench-graph-token' });
const results = [];
for (const n of values.processes.split(',').filter(Boolean).map(Number)) {
  const result = await run(n, graph);
  console.log(JSON.stringify(result));
  results.push(result);
}
await graph.close();

console.log(
  '\n| processes | load (1 min) | idle: PG CPU ms/s | inbound/s | p50 / p99 ms | PG CPU ms per inbound | sessions active / waiting on a lock | sends accepted/s | delivered/s | PG CPU ms per send | claims running | sessions active / waiting on a lock |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results)
  console.log(
    `| ${r.processes} | ${r.load} | ${r.idlePgCpuMsPerSec} | ${r.inbound.perSec} | ${r.inbound.p50} / ${r.inbound.p99} | ${r.inbound.pgCpuMsPerMessage} | ${r.inbound.sessionsActive} / ${r.inbound.waitingOnLock} | ${r.sends.acceptedPerSec} | ${r.sends.deliveredPerSec} | ${r.sends.pgCpuMsPerSend} | ${r.sends.claimsRunning} | ${r.sends.sessionsActive} / ${r.sends.waitingOnLock} |`,
  );
