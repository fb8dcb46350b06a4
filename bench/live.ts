/**
 * The dashboards' live stream (issue 25): latency from the commit of a change to its frame on every
 * open stream of the business, over real HTTP (Server-Sent Events read with fetch and
 * eventsource-parser, as a browser reads them). Prints a Markdown row for docs/PERFORMANCE.md.
 *
 *   npx tsx bench/live.ts [--streams 20] [--rate 50] [--seconds 10]                       # PGlite
 *   TEST_ENGINE=postgres TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
 *     npx tsx bench/live.ts [--processes 2]
 *
 * Each write is what a service does: one transaction that writes a conversation_changed domain event
 * under the conversation's row lock, then the hand-over (dispatch) without waiting for it; its commit
 * time is taken when the transaction's promise resolves. Streams are opened by signed-in sessions, one
 * each. With --processes 2 (PostgreSQL) the streams are served by a second app instance over the same
 * database, which hears the writes of the first through LISTEN/NOTIFY. The server and the clients
 * share this process and the machine's two cores.
 */
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { conversationsChanged } from '../src/modules/domain-events/domain-events.writer.ts';
import { insertContact, insertConversation } from '../test/helpers/factories.ts';
import { createTenant } from '../test/helpers/tenants.ts';
import { buildTestApp, engine } from '../test/helpers/test-app.ts';
import { createUser, signIn } from '../test/modules/dashboard-auth/dashboard-helpers.ts';
import { openSse, type SseClient } from '../test/modules/live/live-helpers.ts';
import { percentile } from './webhooks-receiver.ts';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '20' },
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    processes: { type: 'string', default: '1' },
  },
});
const streams = Number(values.streams);
const rate = Number(values.rate);
const total = rate * Number(values.seconds);
const processes = Number(values.processes);
if (processes === 2 && engine !== 'postgres') throw new Error('--processes 2 needs TEST_ENGINE=postgres');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

const t = await buildTestApp({}, { workers: false });
const second =
  processes === 2 ? await buildApp(t.config, { database: t.database, logger: false, workers: false }) : undefined;
const writerUrl = await listen(t.app);
const serverUrl = second ? await listen(second) : writerUrl;
const db = t.database.db;
const tenant = await createTenant(t.app);
await createUser(t.app, tenant.businessId, { email: 'bench@acme.test', password: 'a long bench password' });
const contact = await insertContact(db, tenant.businessId);
const conversations = await Promise.all(
  Array.from({ length: 20 }, () => insertConversation(db, tenant.businessId, contact.id)),
);

const clients: SseClient[] = [];
for (let i = 0; i < streams; i++) {
  const browser = await signIn(t.app, 'bench@acme.test', 'a long bench password');
  const client = await openSse(`${serverUrl}/dashboard/api/live`, { cookie: `session=${browser.token}` });
  if (client.status !== 200) throw new Error(`stream: ${client.status} ${client.body}`);
  clients.push(client);
}
while (clients.some((c) => c.named('ready').length === 0)) await sleep(10);

const committedAt = new Array<number>(total);
const started = performance.now();
const load = loadavg()[0];
for (let n = 0; n < total; n++) {
  const due = started + (n * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 0) await sleep(wait);
  const conversationId = conversations[n % conversations.length].id;
  await db.transaction().execute(async (trx) => {
    await trx.selectFrom('conversations').select('id').where('id', '=', conversationId).forUpdate().execute();
    await conversationsChanged(trx, tenant.businessId, [{ conversationId, change: 'manual_control', data: { n } }]);
  });
  committedAt[n] = performance.now();
  void t.app.services.domainEvents.dispatch(['conversation_changed']);
}
const deadline = performance.now() + 5000;
const received = () => clients.reduce((sum, c) => sum + c.frames.filter((f) => !f.event).length, 0);
while (received() < total * streams && performance.now() < deadline) await sleep(20);

const latencies: number[] = [];
for (const client of clients)
  for (const frame of client.frames.filter((f) => !f.event)) {
    const n = (JSON.parse(frame.data) as { data: { n: number } }).data.n;
    latencies.push(frame.at - committedAt[n]);
  }
const ms = (v: number) => `${v.toFixed(1)} ms`;
console.log(
  `| ${engine}${second ? ', 2 processes' : ''} | ${streams} | ${rate}/s × ${values.seconds} s | ${latencies.length} / ${total * streams} | ` +
    `${ms(percentile(latencies, 50))} | ${ms(percentile(latencies, 99))} | ${ms(Math.max(...latencies))} | ${load.toFixed(1)} |`,
);
for (const client of clients) client.close();
await second?.close();
await t.close();
