/**
 * The AI agent's own time: from an inbound notification's request to its reply reaching the
 * channel (the fake Graph API), less the model's time (each run's recorded model latency, the
 * fake model answering at once), at a fixed rate of new conversations. The agent's debounce is 0,
 * so the figure is the service's work: the notification, the subscriber, the run job's claim, the
 * prompt, the reply's transaction, the send job and its provider call.
 *
 *   npx tsx bench/ai-agent.bench.ts [--engine pglite|postgres] [--rate 50] [--seconds 10]
 *                                   [--model-ms 0] [--concurrency 64]
 *
 * `--model-ms` makes the fake model take that long (a real one takes seconds, which is what
 * LLM_CONCURRENCY, given by `--concurrency`, must cover at the rate); it is subtracted all the same.
 * The medians of the steps follow: to the run's start (the notification, the subscriber, the
 * claim), the run, and from its end to the send job's SENT.
 * PostgreSQL: TEST_DATABASE_URL (a schema of its own, dropped afterwards).
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { inboundMessage, startFakeGraphApi } from '../test/helpers/fake-graph-api.ts';
import { startFakeLlmApi } from '../test/helpers/fake-llm-api.ts';
import { adminHeaders, createTenant } from '../test/helpers/tenants.ts';
import { buildApp } from '../src/app.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { postgresTestDatabase, testConfig } from '../test/helpers/test-app.ts';
import { createWhatsAppChannel, notificationFor, postSigned } from '../test/modules/inbound/whatsapp-helpers.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'pglite' },
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    'model-ms': { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '64' },
  },
});
process.env.TEST_ENGINE = values.engine;
const rate = Number(values.rate);
const total = rate * Number(values.seconds);

const graph = await startFakeGraphApi();
const llm = await startFakeLlmApi();
const modelMs = Number(values['model-ms']);
llm.reply = () => {
  const text = { text: 'Thanks, we are on it.' };
  return modelMs > 0 ? { hold: new Promise((r) => setTimeout(r, modelMs)), then: text } : text;
};
// The service's own pool (20 connections), not the tests' 5.
const postgres = values.engine === 'postgres' ? await postgresTestDatabase() : undefined;
const database = await openDatabase({
  databaseUrl: postgres?.databaseUrl,
  schema: postgres?.schema,
  dataDir: 'memory://',
});
await migrateToLatest(database.db, postgres?.schema);
const app = await buildApp(
  testConfig({ LLM_URL: llm.url, LLM_CONCURRENCY: values.concurrency, ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }),
  { database, logger: false },
);
await app.ready();
const t = {
  app,
  database,
  async close() {
    await app.close();
    await database.close();
    await postgres?.drop();
  },
};
const tenant = await createTenant(t.app);
const agent = await t.app.inject({
  method: 'POST',
  url: `/admin/v1/businesses/${tenant.businessId}/agents`,
  headers: adminHeaders,
  payload: { name: 'Bench', activation_rules: { debounce_seconds: 0 } },
});
const channel = await createWhatsAppChannel(t.app, tenant.businessId, {
  apiBaseUrl: graph.baseUrl,
  accessToken: graph.accessToken,
});
await t.app.inject({
  method: 'PATCH',
  url: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
  headers: adminHeaders,
  payload: { pace_per_second: 1000, agent_id: agent.json().agent.id },
});

const phone = (i: number) => `3460${String(1_000_000 + i)}`;
const sentAt = new Map<string, number>();
const wallAt = new Map<string, number>();
const repliedAt = new Map<string, number>();
let seen = 0;
// Reads only the requests that came since the last look, every 5 ms (at most 5 ms late).
const watcher = setInterval(() => {
  for (; seen < graph.requests.length; seen++) {
    const request = graph.requests[seen];
    if (request.method !== 'POST' || !request.path.endsWith('/messages')) continue;
    const to = (request.body as { to: string }).to;
    if (!repliedAt.has(to)) repliedAt.set(to, performance.now());
  }
}, 5);

const started = performance.now();
const posts: Promise<unknown>[] = [];
for (let i = 0; i < total; i++) {
  const due = started + (i * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  sentAt.set(phone(i), performance.now());
  wallAt.set(phone(i), Date.now());
  posts.push(
    postSigned(
      t.app,
      notificationFor(channel, {
        contacts: [{ waId: phone(i), name: `Bench ${i}` }],
        messages: [inboundMessage(phone(i), 'text', { body: `¿Dónde está mi pedido ${i}?` })],
      }),
      channel.appSecret,
    ),
  );
}
await Promise.all(posts);
const postedMs = performance.now() - started;
const deadline = performance.now() + 120_000;
while (repliedAt.size < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
clearInterval(watcher);

// Each conversation's model time, as its run recorded it.
const { rows } = await sql<{ phone_number: string; latency: number }>`
  select k.phone_number, (r.model_calls -> 0 ->> 'latency_ms')::int as latency
  from ai_runs r join conversations c on c.business_id = r.business_id and c.id = r.conversation_id
  join contacts k on k.business_id = c.business_id and k.id = c.contact_id
  where r.business_id = ${tenant.businessId} and r.status = 'replied'`.execute(t.database.db);
const latency = new Map(rows.map((r) => [r.phone_number, r.latency]));
const own = [...repliedAt].flatMap(([to, at]) => (latency.has(to) ? [at - sentAt.get(to)! - latency.get(to)!] : []));
own.sort((a, b) => a - b);
const pct = (p: number) => own[Math.min(own.length - 1, Math.floor((p / 100) * own.length))].toFixed(0);
const model = [...latency.values()].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    engine: values.engine,
    rate,
    conversations: total,
    replied: repliedAt.size,
    own_ms: { p50: pct(50), p99: pct(99), max: own[own.length - 1].toFixed(0) },
    model_ms_p50: model[Math.floor(model.length / 2)],
    notifications_answered_after_ms: Math.round(postedMs),
  }),
);
{
  const { rows: steps } = await sql<{
    phone_number: string;
    started: string;
    finished: string;
    reply_at: string;
    sent_at: string | null;
  }>`
    select k.phone_number, r.created_at as started, r.finished_at as finished, m.created_at as reply_at, m.status_at as sent_at
    from ai_runs r join conversations c on c.business_id = r.business_id and c.id = r.conversation_id
    join contacts k on k.business_id = c.business_id and k.id = c.contact_id
    join messages m on m.business_id = r.business_id and m.id = r.reply_message_id
    where r.business_id = ${tenant.businessId}`.execute(t.database.db);
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ms = (s: string) => Date.parse(s);
  console.log({
    to_run_start: med(steps.map((r) => ms(r.started) - wallAt.get(r.phone_number)!)),
    run: med(steps.map((r) => ms(r.finished) - ms(r.started))),
    to_sent: med(steps.flatMap((r) => (r.sent_at ? [ms(r.sent_at) - ms(r.finished)] : []))),
  });
}
await t.close();
await graph.close();
await llm.close();
