/**
 * API latency while long work runs (figures in docs/PERFORMANCE.md#api-latency-during-long-work):
 * a streamed import of --contacts contacts with --messages messages each, and one signed WhatsApp
 * notification of --notification messages (plus --receipts receipts for unknown messages, in a
 * notification of their own when given), started together, while API calls arrive at --rate per
 * second, open loop: GET /external/v2/contacts/:uuid and POST /external/v2/messages/send in turn.
 * Latency counts from each call's due time. The same calls alone for --baseline seconds first give
 * the figure without the long work.
 *
 *   npx tsx bench/long-work.bench.ts --engine pglite|postgres [--contacts 12500] [--messages 6]
 *     [--notification 5000] [--receipts 0] [--rate 20] [--baseline 5] [--port 4760] [--db bench_long_work]
 *
 * PG_URL (default postgres://postgres@127.0.0.1:5432); the database --db is dropped and created anew.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Pool, request } from 'undici';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
} from '../test/helpers/fake-graph-api.ts';
import { runImport } from './import.bench.ts';
import { phoneOf, recordCount } from './lib/generate.ts';
import { openLoop } from './lib/measure.ts';
import { percentiles, type Percentiles } from './lib/messaging-load.ts';
import { createChannel, inboundRequests, type BenchChannel } from './lib/messaging-setup.ts';
import { createTenant, freshStorage, startService, type Engine, type Tenant } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'pglite' },
    contacts: { type: 'string', default: '12500' },
    messages: { type: 'string', default: '6' },
    notification: { type: 'string', default: '5000' },
    receipts: { type: 'string', default: '0' },
    rate: { type: 'string', default: '20' },
    baseline: { type: 'string', default: '5' },
    /** Senders with an open service window, the recipients of the sends and the contacts read. */
    senders: { type: 'string', default: '200' },
    port: { type: 'string', default: '4760' },
    db: { type: 'string', default: 'bench_long_work' },
  },
});
const engine = values.engine as Engine;
const rate = Number(values.rate);
const fmt = (n: number, d = 1) => n.toFixed(d);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The API calls of the run: a contact read and a send, in turn. */
function apiCalls(tenant: Tenant, channel: BenchChannel, contacts: { id: string; phone: string }[]) {
  let n = 0;
  return () => {
    const contact = contacts[n % contacts.length];
    const call =
      n % 2 === 0
        ? { method: 'GET' as const, path: `/external/v2/contacts/${contact.id}` }
        : {
            method: 'POST' as const,
            path: '/external/v2/messages/send',
            body: JSON.stringify({
              channel_uuid: channel.id,
              from: 'whatsapp',
              to: contact.phone,
              type: 'text',
              content: { text: `long-work send ${n}` },
            }),
          };
    n++;
    return { ...call, headers: { 'x-api-key': tenant.apiKey, 'content-type': 'application/json' } };
  };
}

interface CallFigures {
  calls: number;
  failures: string[];
  latency: Percentiles;
  reads: Percentiles;
  sends: Percentiles;
  series: [number, number, string][];
}

/**
 * Fires a call every 1/rate s (open loop) until `until` resolves, and answers each call's latency
 * from its due time.
 */
async function callsDuring(next: ReturnType<typeof apiCalls>, until: Promise<unknown>, pool: Pool) {
  const { calls, failures } = await openLoop(pool, rate, next, until);
  const ms = (method?: string) => calls.filter((c) => method === undefined || c.method === method).map((c) => c.ms);
  return {
    calls: calls.length,
    failures,
    latency: percentiles(ms()),
    reads: percentiles(ms('GET')),
    sends: percentiles(calls.filter((c) => c.method !== 'GET').map((c) => c.ms)),
    /** [due ms from the start, latency ms, method] of each call, to see when the slow ones were due. */
    series: calls.map((c) => [c.due, Math.round(c.ms), c.method] as [number, number, string]),
  } satisfies CallFigures;
}

async function postNotification(url: string, payload: string, headers: Record<string, string>) {
  const started = performance.now();
  const res = await request(`${url}/channels/whatsapp/webhook`, {
    method: 'POST',
    headers,
    body: payload,
    headersTimeout: 300_000,
    bodyTimeout: 300_000,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`notification answered ${res.statusCode}: ${text.slice(0, 500)}`);
  return (performance.now() - started) / 1000;
}

const storage = await freshStorage(engine, values.db);
const fake = await startFakeGraphApi();
const PROFILE_FILE = '/tmp/long-work.cpuprofile';
const service = await startService(
  storage,
  Number(values.port),
  process.env.BENCH_PROFILE
    ? {
        NODE_OPTIONS: `--import ${new URL('./lib/cpu-profile-preload.mjs', import.meta.url).pathname}`,
        CPU_PROFILE_FILE: PROFILE_FILE,
      }
    : {},
);
const report: Record<string, unknown> = { startedAt: new Date().toISOString(), options: values };
try {
  const tenant = await createTenant(service.url);
  const channel = await createChannel(service.url, tenant.businessId, fake, 1, 1000);
  // Senders whose window is open: the recipients of the sends and the contacts read.
  const senders = Array.from({ length: Number(values.senders) }, (_, i) => phoneOf(900_000 + i));
  for (const r of inboundRequests(channel, senders)) {
    const res = await request(service.url + r.path, { method: r.method, headers: r.headers, body: r.body });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`warm-up notification answered ${res.statusCode}`);
  }
  const contacts = await Promise.all(
    senders.map(async (phone) => {
      const res = await request(`${service.url}/external/v2/contacts?phone=${phone}`, {
        headers: { 'x-api-key': tenant.apiKey },
      });
      const body = (await res.body.json()) as { results: { id: string }[] };
      return { id: body.results[0].id, phone };
    }),
  );
  const next = apiCalls(tenant, channel, contacts);

  // The client's connections are open before the measures, as a busy client's are.
  const pool = new Pool(service.url, { connections: 64, pipelining: 1 });
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      const res = await pool.request({ method: 'GET', path: '/healthz' });
      await res.body.dump();
    }),
  );
  const baseline = await callsDuring(next, sleep(Number(values.baseline) * 1000), pool);

  // The long work: the import and the notification(s), started together.
  const shape = { contacts: Number(values.contacts), messagesPerConversation: Number(values.messages) };
  const messages = Array.from({ length: Number(values.notification) }, (_, i) =>
    inboundMessage(phoneOf(500_000 + (i % 2000)), 'text', { body: `long notification message ${i}` }),
  );
  const notification = signedNotification(
    metaNotification({
      phoneNumberId: channel.phoneNumberId,
      displayPhoneNumber: channel.identifier,
      contacts: [...new Set(messages.map((m) => m.from as string))].map((waId) => ({ waId, name: `Sender ${waId}` })),
      messages,
    }),
    channel.appSecret,
  );
  const receiptCount = Number(values.receipts);
  const receipts =
    receiptCount > 0
      ? signedNotification(
          metaNotification({
            phoneNumberId: channel.phoneNumberId,
            displayPhoneNumber: channel.identifier,
            // Meta's shortest receipt (no conversation or pricing): 20 000 of them fit the body limit.
            statuses: Array.from({ length: receiptCount }, (_, i) => ({
              id: `wamid.unknown-${i}`,
              status: 'delivered',
              timestamp: String(Math.floor(Date.now() / 1000)),
              recipient_id: senders[i % senders.length],
            })),
          }),
          channel.appSecret,
        )
      : undefined;
  const loadBefore = loadavg()[0];
  if (process.env.BENCH_PROFILE) process.kill(service.pid, 'SIGUSR2');
  const started = performance.now();
  const importDone =
    shape.contacts > 0
      ? runImport(service, tenant, shape, '', engine === 'postgres' ? values.db : undefined)
      : undefined;
  const notificationDone = (
    messages.length > 0 ? postNotification(service.url, notification.payload, notification.headers) : Promise.resolve(0)
  ).then((sec) => {
    process.stderr.write(`  notification answered after ${fmt(sec)} s\n`);
    return sec;
  });
  const receiptsDone = receipts ? postNotification(service.url, receipts.payload, receipts.headers) : undefined;
  const longWork = Promise.all([importDone, notificationDone, receiptsDone]);
  const during = await callsDuring(next, longWork, pool);
  await pool.close();
  const [imported, notificationSec, receiptsSec] = await longWork;
  const wallSec = (performance.now() - started) / 1000;
  if (process.env.BENCH_PROFILE) process.kill(service.pid, 'SIGUSR2');
  report.result = {
    baseline,
    during,
    import: imported,
    notificationSec,
    receiptsSec,
    wallSec,
    loadBefore,
    loadAfter: loadavg()[0],
  };

  const row = (label: string, f: CallFigures) =>
    `| ${label} | ${f.calls} | ${fmt(f.latency.p50)} / ${fmt(f.latency.p99)} / ${fmt(f.latency.max, 0)} | ${fmt(f.reads.p99)} | ${fmt(f.sends.p99)} | ${f.failures.length} |`;
  const lines = [
    `Long work on ${engine}: import of ${recordCount(shape)} records (${fmt(imported?.seconds ?? 0)} s, ${fmt(imported?.recordsPerSec ?? 0, 0)} records/s), ` +
      `a notification of ${messages.length} messages (${fmt(notificationSec)} s)` +
      (receiptsSec !== undefined ? `, one of ${receiptCount} receipts (${fmt(receiptsSec)} s)` : '') +
      `; API calls at ${rate}/s; load average ${fmt(loadBefore)} before, ${fmt(loadavg()[0])} after`,
    '',
    '| API calls | calls | p50 / p99 / max ms | read p99 ms | send p99 ms | failures |',
    '|---|---:|---|---:|---:|---:|',
    row('alone', baseline),
    row('during the long work', during),
    '',
  ];
  const slowest = [...during.series].sort((a, b) => b[1] - a[1]).slice(0, 8);
  lines.push(
    `slowest calls (due at ms from the start: latency ms): ${slowest.map(([at, ms]) => `${at}: ${ms}`).join(', ')}`,
    '',
  );
  if (during.failures.length > 0) lines.push(`first failure: ${during.failures[0]}`, '');
  if (imported && imported.errorCount > 0) lines.push(`import errors: ${JSON.stringify(imported.firstErrors)}`, '');
  process.stdout.write(lines.join('\n') + '\n');
  const file = `/tmp/long-work-${engine}.json`;
  writeFileSync(file, JSON.stringify(report, null, 2));
  process.stdout.write(`raw figures: ${file}\n`);
} finally {
  await service.stop();
  await fake.close();
  await storage.dispose();
}
