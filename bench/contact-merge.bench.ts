/**
 * A merge of a contact with a long history (figures in docs/PERFORMANCE.md#api-latency-during-long-work):
 * the loser has --messages messages and --events events in one conversation (imported), and is merged
 * into a contact with a short one while a client reads GET /external/v2/contacts/:uuid of the survivor
 * at --rate calls per second, open loop (latency counts from each call's due time). Measured: the
 * merge's answer, the reads' latency during the move (from the merge's request to the end of the
 * move the service logs), the move's time, and the same reads alone for --baseline seconds first.
 *
 *   npx tsx bench/contact-merge.bench.ts --engine pglite|postgres [--messages 20000] [--events 2000]
 *     [--rate 50] [--baseline 5] [--port 4780] [--db bench_contact_merge] [--synchronous]
 *
 * --synchronous measures a service whose merge moves the history before it answers (no move is
 * logged): the move ends with the answer. PG_URL (default postgres://postgres@127.0.0.1:5432); the
 * database --db is dropped and created anew. Writes the raw figures to /tmp.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { v7 } from 'uuid';
import { Pool, request } from 'undici';
import { openLoop } from './lib/measure.ts';
import { percentiles, type Percentiles } from './lib/messaging-load.ts';
import { ADMIN_TOKEN, createTenant, freshStorage, startService, type Engine, type Tenant } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'pglite' },
    messages: { type: 'string', default: '20000' },
    events: { type: 'string', default: '2000' },
    rate: { type: 'string', default: '50' },
    baseline: { type: 'string', default: '5' },
    port: { type: 'string', default: '4780' },
    db: { type: 'string', default: 'bench_contact_merge' },
    synchronous: { type: 'boolean', default: false },
  },
});
const engine = values.engine as Engine;
const rate = Number(values.rate);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, d = 1) => n.toFixed(d);
const log = (s: string) => process.stderr.write(s + '\n');

/** The two contacts' records: the survivor with a short history, the loser with the long one. */
function records(messages: number, events: number) {
  const survivor = v7();
  const loser = v7();
  const lines: object[] = [];
  const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
  for (const [contact, email, count, eventCount] of [
    [survivor, 'survivor@bench.test', 10, 2],
    [loser, 'loser@bench.test', messages, events],
  ] as const) {
    const conversation = v7();
    lines.push({ type: 'contact', id: contact, first_name: 'Bench', email, created_at: at(0) });
    lines.push({ type: 'conversation', id: conversation, contact_id: contact, channel: 'whatsapp', created_at: at(0) });
    for (let i = 0; i < count; i++)
      lines.push({
        type: 'message',
        id: v7(),
        conversation_id: conversation,
        direction: i % 2 === 0 ? 'inbound' : 'outbound',
        sender_type: i % 2 === 0 ? 'contact' : 'api',
        message_type: 'text',
        text: `history message ${i}`,
        status: i % 2 === 0 ? 'RECEIVED' : 'READ',
        created_at: at(i + 1),
      });
    for (let i = 0; i < eventCount; i++)
      lines.push({
        type: 'event',
        id: v7(),
        conversation_id: conversation,
        contact_id: contact,
        event_type: 'conversation_resolved',
        actor_type: 'system',
        data: {},
        created_at: at(i + 1),
      });
  }
  return { survivor, loser, ndjson: lines.map((l) => JSON.stringify(l)).join('\n') + '\n' };
}

/** GET the contact every 1/rate s (open loop) until `until` resolves; each call's latency from its due time. */
async function readsDuring(pool: Pool, tenant: Tenant, contactId: string, until: Promise<unknown>) {
  const read = {
    method: 'GET' as const,
    path: `/external/v2/contacts/${contactId}`,
    headers: { 'x-api-key': tenant.apiKey },
  };
  const { calls, failures } = await openLoop(pool, rate, () => read, until);
  const latencies = calls.map((c) => c.ms);
  /** [due ms from the start, latency ms] of each call, to see when the slow ones were due. */
  const series = calls.map((c) => [c.due, Math.round(c.ms)]);
  return { calls: latencies.length, failures, latency: percentiles(latencies), series };
}

/** The end of a move, as the service logs it (pino's JSON lines). */
let moveLogged: (line: { rows: number; ms: number }) => void = () => undefined;
const moved = new Promise<{ rows: number; ms: number }>((resolve) => (moveLogged = resolve));
const onLine = (line: string) => {
  if (!line.includes('history moved to the survivor')) return;
  const { rows, ms } = JSON.parse(line) as { rows: number; ms: number };
  moveLogged({ rows, ms });
};

const storage = await freshStorage(engine, values.db);
const service = await startService(storage, Number(values.port), { LOG_LEVEL: 'info' }, onLine);
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), options: values };
try {
  const tenant = await createTenant(service.url);
  const data = records(Number(values.messages), Number(values.events));
  const imported = await request(`${service.url}/admin/v1/businesses/${tenant.businessId}/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/x-ndjson' },
    body: data.ndjson,
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  const importAnswer = (await imported.body.json()) as { imported: Record<string, number>; error_count: number };
  if (imported.statusCode !== 200 || importAnswer.error_count > 0)
    throw new Error(`import answered ${imported.statusCode}: ${JSON.stringify(importAnswer).slice(0, 500)}`);
  log(`[${engine}] imported ${JSON.stringify(importAnswer.imported)}`);

  // The client's connections are open before the measures, as a busy client's are.
  const pool = new Pool(service.url, { connections: 16, pipelining: 1 });
  const baseline = await readsDuring(pool, tenant, data.survivor, sleep(Number(values.baseline) * 1000));

  const loadBefore = loadavg()[0];
  const started = performance.now();
  const answered = request(`${service.url}/external/v2/contacts/merge`, {
    method: 'POST',
    headers: { 'x-api-key': tenant.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ survivor_id: data.survivor, loser_id: data.loser }),
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  }).then(async (res) => {
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`merge answered ${res.statusCode}: ${text}`);
    return performance.now() - started;
  });
  const moveEnded = values.synchronous
    ? answered.then(() => ({ rows: Number(values.messages) + Number(values.events), ms: NaN }))
    : moved;
  const ended = moveEnded.then(() => performance.now() - started);
  const during = await readsDuring(pool, tenant, data.survivor, ended);
  await pool.close();
  const answerMs = await answered;
  const moveMs = await ended;
  const move = await moveEnded;
  report.result = { baseline, during, answerMs, moveMs, move, loadBefore, loadAfter: loadavg()[0] };

  const row = (name: string, r: { calls: number; latency: Percentiles; failures: string[] }) =>
    `| ${name} | ${r.calls} | ${fmt(r.latency.p50)} | ${fmt(r.latency.p99)} | ${fmt(r.latency.max)} | ${r.failures.length} |`;
  console.log(`\n${engine}: merge of ${values.messages} messages + ${values.events} events`);
  console.log(
    `answer ${fmt(answerMs)} ms; move ended ${fmt(moveMs / 1000, 2)} s after the request ` +
      `(${move.rows} rows, ${fmt(move.ms / 1000, 2)} s logged); load ${fmt(loadBefore)}`,
  );
  console.log('| GET /contacts/:uuid | calls | p50 ms | p99 ms | max ms | failures |');
  console.log('|---|---|---|---|---|---|');
  console.log(row('alone', baseline));
  console.log(row('during the merge', during));
  const slowest = [...during.series].sort((a, b) => b[1] - a[1]).slice(0, 5);
  console.log(`slowest calls during the merge [due ms, latency ms]: ${JSON.stringify(slowest)}`);
} finally {
  const file = `/tmp/contact-merge-bench-${engine}-${Date.now()}.json`;
  writeFileSync(file, JSON.stringify(report, null, 2));
  log(`raw figures: ${file}`);
  await service.stop();
  await storage.dispose();
}
