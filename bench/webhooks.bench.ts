/**
 * Webhook benchmarks of issue 4, on PostgreSQL (PG_URL, default postgres://postgres@127.0.0.1:5432;
 * the database `bench_webhooks` is dropped and created anew per scenario). Prints Markdown for
 * docs/PERFORMANCE.md#webhooks.
 *
 *   npx tsx bench/webhooks.bench.ts [--only throughput,latency,kill] [--rate 1000] [--seconds 30]
 *                                   [--inbound-rate 200] [--inbound-seconds 30] [--kill-total 5000]
 *
 * throughput: deliveries written straight into the outbox table at --rate per second (as message
 *   writes would) and sent by the service's worker to a receiver on loopback.
 * latency: signed WhatsApp notifications at --inbound-rate per second; time from the service
 *   accepting one (its 200) to the receiver getting the webhook.
 * kill: --kill-total notifications; the server is SIGKILLed part-way, restarted, and the
 *   unacknowledged notifications are sent again (as Meta does); the receiver must end with one
 *   distinct webhook-id per message.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Pool, request } from 'undici';
import { metaNotification, signedNotification } from '../test/helpers/fake-graph-api.ts';
import {
  ADMIN_TOKEN,
  createTenant,
  freshStorage,
  startService,
  type RunningProcess,
  type Storage,
} from './lib/service.ts';
import { BenchReceiver, percentile } from './webhooks-receiver.ts';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'throughput,latency,kill' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '30' },
    'inbound-rate': { type: 'string', default: '200' },
    'inbound-seconds': { type: 'string', default: '30' },
    'kill-total': { type: 'string', default: '5000' },
    port: { type: 'string', default: '4350' },
  },
});
const port = Number(values.port);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowMs = () => performance.timeOrigin + performance.now();
const ms = (v: number) => `${v.toFixed(1)} ms`;

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function admin<T>(url: string, method: 'POST' | 'GET', path: string, body?: unknown): Promise<T> {
  const res = await request(url + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.body.json()) as T;
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

interface Setup {
  storage: Storage;
  service: RunningProcess;
  receiver: BenchReceiver;
  businessId: string;
  webhookId: string;
}

async function setup(): Promise<Setup> {
  const storage = await freshStorage('postgres', 'bench_webhooks');
  const service = await startService(storage, port, { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  const receiver = await BenchReceiver.start();
  const { businessId } = await createTenant(service.url);
  const { webhook, secret } = await admin<{ webhook: { id: string }; secret: string }>(
    service.url,
    'POST',
    `/admin/v1/businesses/${businessId}/webhooks`,
    { event: 'message_created', url: receiver.url },
  );
  receiver.secret = secret;
  return { storage, service, receiver, businessId, webhookId: webhook.id };
}

async function teardown(s: Setup): Promise<void> {
  await s.service.stop();
  await s.receiver.close();
  await s.storage.dispose();
}

/** Runs a scenario on a fresh setup and always stops its service (a detached process group). */
async function scenario(run: (s: Setup) => Promise<string>): Promise<string> {
  const s = await setup();
  const stopOnSignal = () => void s.service.stop().finally(() => process.exit(1));
  process.once('SIGTERM', stopOnSignal);
  process.once('SIGINT', stopOnSignal);
  try {
    return await run(s);
  } finally {
    process.off('SIGTERM', stopOnSignal);
    process.off('SIGINT', stopOnSignal);
    await teardown(s);
  }
}

async function throughput(s: Setup): Promise<string> {
  const rate = Number(values.rate);
  const seconds = Number(values.seconds);
  const db = new pg.Client({ connectionString: s.storage.env.DATABASE_URL });
  await db.connect();
  const conversations = Array.from({ length: 1000 }, () => crypto.randomUUID());
  const sample = {
    to: '15550001111',
    from: '34600111222',
    text: '',
    attachments: [],
    media: [],
    status: 'received',
    channel: 'whatsapp',
    contact: {
      uuid: crypto.randomUUID(),
      name: 'Ada Lovelace',
      phoneNumber: '+34600111222',
      avatarUrl: null,
      createdAt: new Date().toISOString(),
      source: 'whatsapp',
      href: 'http://x/dashboard/contacts/1',
      conversationHref: 'http://x/dashboard/conversations/1',
      tags: ['vip'],
    },
    createdAt: '',
    metadata: { order: '42' },
  };
  const perTick = rate / 10;
  let written = 0;
  let maxBacklog = 0;
  const cpuBefore = cpuSeconds(s.service.pid);
  const started = nowMs();
  const perSecond: number[] = [];
  for (let tick = 0; tick < seconds * 10; tick++) {
    const due = started + tick * 100;
    if (due > nowMs()) await sleep(due - nowMs());
    await db.query(
      `INSERT INTO webhook_deliveries (business_id, id, webhook_id, event, conversation_id, payload, next_attempt_at, created_at, updated_at)
       SELECT $1, gen_random_uuid(), $2, 'message_created', ($3::uuid[])[1 + g % 1000],
              jsonb_set(jsonb_set($4::jsonb, '{text}', to_jsonb('t-' || g)), '{createdAt}', to_jsonb(clock_timestamp())), now(), now(), now()
       FROM generate_series($5::int, $6::int) g`,
      [s.businessId, s.webhookId, conversations, JSON.stringify(sample), written, written + perTick - 1],
    );
    written += perTick;
    if (tick % 10 === 9) {
      perSecond.push(s.receiver.receipts.length - perSecond.reduce((a, b) => a + b, 0));
      maxBacklog = Math.max(maxBacklog, written - s.receiver.receipts.length);
    }
  }
  const window = (nowMs() - started) / 1000;
  const inWindow = s.receiver.receipts.length;
  const deadline = nowMs() + 60_000;
  while (s.receiver.receipts.length < written && nowMs() < deadline) await sleep(100);
  const cpuUsed = cpuSeconds(s.service.pid) - cpuBefore;
  const lags = s.receiver.receipts.map((r) => r.atMs - Date.parse(r.createdAt));
  const distinct = new Set(s.receiver.receipts.map((r) => r.webhookId)).size;
  const steady = perSecond.slice(2);
  await db.end();
  const { deliveries } = await admin<{ deliveries: { ok: boolean }[] }>(
    s.service.url,
    'GET',
    `/admin/v1/businesses/${s.businessId}/webhooks/${s.webhookId}/deliveries?limit=200`,
  );
  return [
    `Offered ${rate} deliveries/s for ${seconds} s (${written} deliveries, 1000 conversations, ~1 KB payloads), one service process, PostgreSQL.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| delivered during the offer window | ${inWindow} in ${window.toFixed(1)} s = ${(inWindow / window).toFixed(0)}/s |`,
    `| delivered per second after warm-up (min / median / max) | ${Math.min(...steady)} / ${percentile(steady, 50)} / ${Math.max(...steady)} |`,
    `| largest backlog at a second boundary | ${maxBacklog} |`,
    `| write-to-receipt lag p50 / p99 / max | ${ms(percentile(lags, 50))} / ${ms(percentile(lags, 99))} / ${ms(Math.max(...lags))} |`,
    `| delivered in total / distinct webhook-ids | ${s.receiver.receipts.length} / ${distinct} |`,
    `| signatures verified (sample) / bad | ${s.receiver.verified} / ${s.receiver.badSignatures} |`,
    `| last log page all ok | ${deliveries.every((d) => d.ok)} |`,
    `| service CPU per 1 000 deliveries (user + system) | ${((cpuUsed / s.receiver.receipts.length) * 1000).toFixed(2)} s |`,
    `| machine load average (1 min) at the end | ${loadavg()[0].toFixed(1)} |`,
  ].join('\n');
}

interface Channel {
  phoneNumberId: string;
  appSecret: string;
}

async function whatsappChannel(url: string, businessId: string): Promise<Channel> {
  const phoneNumberId = String(100_000_000_000_000n + BigInt(`0x${randomBytes(5).toString('hex')}`));
  const appSecret = randomBytes(16).toString('hex');
  await admin(url, 'POST', `/admin/v1/businesses/${businessId}/channels`, {
    type: 'whatsapp',
    identifier: '15550001111',
    provider: {
      kind: 'whatsapp_cloud',
      phone_number_id: phoneNumberId,
      access_token: 'EAAGbench',
      app_secret: appSecret,
      verify_token: 'bench-verify',
      api_base_url: 'http://127.0.0.1:9/v21.0',
    },
  });
  return { phoneNumberId, appSecret };
}

/** One signed notification carrying one text message `text` from one of 500 senders. */
function notification(channel: Channel, i: number, text: string) {
  const from = `3460${String(i % 500).padStart(7, '0')}`;
  const body = metaNotification({
    phoneNumberId: channel.phoneNumberId,
    displayPhoneNumber: '15550001111',
    contacts: [{ waId: from, name: `Sender ${i % 500}` }],
    messages: [
      {
        from,
        id: `wamid.bench.${text}`,
        timestamp: String(Math.floor(Date.now() / 1000)),
        type: 'text',
        text: { body: text },
      },
    ],
  });
  return signedNotification(body, channel.appSecret);
}

async function post(pool: Pool, channel: Channel, i: number, text: string): Promise<number> {
  const { payload, headers } = notification(channel, i, text);
  const res = await pool.request({ method: 'POST', path: '/channels/whatsapp/webhook', headers, body: payload });
  await res.body.dump();
  return res.statusCode;
}

async function latency(s: Setup): Promise<string> {
  const rate = Number(values['inbound-rate']);
  const seconds = Number(values['inbound-seconds']);
  const channel = await whatsappChannel(s.service.url, s.businessId);
  const pool = new Pool(s.service.url, { connections: 32 });
  const probe = await post(pool, channel, 0, 'probe');
  const deadline = nowMs() + 5000;
  while (s.receiver.receipts.length === 0 && nowMs() < deadline) await sleep(20);
  if (probe !== 200 || s.receiver.receipts.length === 0) {
    await pool.close();
    return `Not measured: the inbound route (status ${probe}) did not produce a webhook within 5 s (is WebhookEvents.messageCreated wired into the inbound store?).`;
  }
  const accepted = new Map<string, number>();
  const total = rate * seconds;
  const started = nowMs();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    if (due > nowMs()) await sleep(due - nowMs());
    const text = `lat-${i}`;
    inflight.push(
      post(pool, channel, i, text).then((status) => {
        if (status === 200) accepted.set(text, nowMs());
      }),
    );
  }
  await Promise.all(inflight);
  const end = nowMs() + 30_000;
  while (s.receiver.receipts.length < total + 1 && nowMs() < end) await sleep(50);
  const lags = s.receiver.receipts.filter((r) => accepted.has(r.text)).map((r) => r.atMs - accepted.get(r.text)!);
  await pool.close();
  return [
    `${rate} inbound WhatsApp notifications/s for ${seconds} s (${total} messages from 500 senders), one service process, PostgreSQL.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| accepted (200) / webhooks received | ${accepted.size} / ${lags.length} |`,
    `| accept-to-receipt p50 / p99 / max | ${ms(percentile(lags, 50))} / ${ms(percentile(lags, 99))} / ${ms(Math.max(...lags))} |`,
  ].join('\n');
}

async function kill(s: Setup): Promise<string> {
  const total = Number(values['kill-total']);
  const channel = await whatsappChannel(s.service.url, s.businessId);
  let pool = new Pool(s.service.url, { connections: 16 });
  const acked = new Set<number>();
  let killedAt = -1;
  const sendAll = async (indexes: number[], killAfter: number | null) => {
    const queue = [...indexes];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
          try {
            if ((await post(pool, channel, i, `kill-${i}`)) === 200) acked.add(i);
          } catch {
            // the server is gone: Meta would retry this one later
          }
          if (killAfter !== null && killedAt < 0 && acked.size >= killAfter) {
            killedAt = acked.size;
            process.kill(s.service.pid, 'SIGKILL');
          }
        }
      }),
    );
  };
  await sendAll(
    Array.from({ length: total }, (_, i) => i),
    Math.floor(total / 2),
  );
  const next = acked.size;
  await s.service.stop();
  await pool.close();
  const receivedBeforeRestart = new Set(s.receiver.receipts.map((r) => r.webhookId)).size;
  s.service = await startService(s.storage, port, { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  pool = new Pool(s.service.url, { connections: 16 });
  // Meta resends what was not acknowledged; the ones acknowledged are not sent again.
  await sendAll(
    Array.from({ length: total }, (_, i) => i).filter((i) => !acked.has(i)),
    null,
  );
  const deadline = nowMs() + 60_000;
  const texts = () => new Set(s.receiver.receipts.map((r) => r.text));
  while (texts().size < total && nowMs() < deadline) await sleep(100);
  const ids = new Set(s.receiver.receipts.map((r) => r.webhookId));
  const idsPerText = new Map<string, Set<string>>();
  for (const r of s.receiver.receipts) idsPerText.set(r.text, (idsPerText.get(r.text) ?? new Set()).add(r.webhookId));
  const oneIdEach = [...idsPerText.values()].every((set) => set.size === 1);
  await pool.close();
  return [
    `${total} inbound notifications (16 concurrent); SIGKILL of the server after ${killedAt} were acknowledged; restart on the same PostgreSQL database; the ${total - next} unacknowledged notifications sent again.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| distinct webhook-ids received before the kill | ${receivedBeforeRestart} |`,
    `| messages received / distinct webhook-ids at the end | ${texts().size} / ${ids.size} |`,
    `| calls received in total (duplicates are at-least-once resends of an unacknowledged call) | ${s.receiver.receipts.length} |`,
    `| every message carried one webhook-id across all its calls | ${oneIdEach} |`,
  ].join('\n');
}

const only = new Set(values.only.split(','));
const sections: string[] = [];
if (only.has('throughput')) sections.push(`### Delivery throughput\n\n${await scenario(throughput)}`);
if (only.has('latency')) sections.push(`### Inbound message to webhook receipt\n\n${await scenario(latency)}`);
if (only.has('kill')) sections.push(`### SIGKILL during inbound traffic\n\n${await scenario(kill)}`);
console.log(sections.join('\n\n'));
