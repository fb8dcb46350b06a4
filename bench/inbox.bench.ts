/**
 * Inbox benchmark (figures in docs/PERFORMANCE.md#the-dashboards-inbox): seeds --conversations
 * conversations (one contact and three messages each) into one business with bulk SQL
 * (bench/lib/inbox-seed.ts), then measures, one call after another, the first page of the inbox in
 * its default view and under each filter, a second page, the unread total, one conversation and
 * its thread:
 *  1. as service calls in this process, over the database the service stopped (p50 / p99 of
 *     --runs calls after --warmup);
 *  2. as HTTP requests to the service started as `npm start` starts it, signed in as the user the
 *     views are of (the same counts), on loopback.
 *
 *   npx tsx --no-liftoff bench/inbox.bench.ts [--engine postgres|pglite|both] [--conversations 100000]
 *     [--runs 50] [--warmup 10] [--port 4800] [--db bench_inbox]
 *
 * `--no-liftoff` compiles PGlite's WebAssembly as `npm start` has the service compile it: without it
 * the service calls of this process on PGlite pay V8's tier-up compilations in their p99.
 *
 * PostgreSQL: PG_URL (default postgres://postgres@127.0.0.1:5432); the database --db is dropped and
 * created anew. PGlite: a new directory under /tmp, removed afterwards. Prints a Markdown table and
 * writes the raw figures to /tmp.
 */
import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { openDatabase } from '../src/db/database.ts';
import { dashboardLinks } from '../src/lib/links.ts';
import { DashboardContactsService } from '../src/modules/contacts/contacts.dashboard.service.ts';
import { ContactsService } from '../src/modules/contacts/contacts.service.ts';
import { InboxService } from '../src/modules/conversations/inbox.service.ts';
import type { InboxQuery } from '../src/modules/conversations/inbox.schemas.ts';
import { MediaService } from '../src/modules/media/media.service.ts';
import { ThreadService } from '../src/modules/messages/thread.service.ts';
import { createFileStorage } from '../src/storage/create-file-storage.ts';
import { seedInbox, type InboxSeed } from './lib/inbox-seed.ts';
import { percentiles, type Percentiles } from './lib/messaging-load.ts';
import { ADMIN_TOKEN, createTenant, freshStorage, startService, type Engine, type Storage } from './lib/service.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'both' },
    conversations: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '10' },
    port: { type: 'string', default: '4800' },
    db: { type: 'string', default: 'bench_inbox' },
  },
});
const engines: Engine[] = values.engine === 'both' ? ['postgres', 'pglite'] : [values.engine as Engine];
const conversations = Number(values.conversations);
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const port = Number(values.port);
const PASSWORD = 'bench-password-0123';
const SECRET = 'bench-inbox-secret-0123456789-0123456789';
const log = (s: string) => process.stderr.write(s + '\n');

/** The inbox views measured: a name and the query of its first page. */
function views(seed: InboxSeed): [string, Partial<InboxQuery>][] {
  return [
    ['open (the default)', {}],
    ['closed', { status: 'closed' }],
    ['channel type, 99%', { channel: 'whatsapp' }],
    ['channel type, 1%', { channel: 'instagram' }],
    ['channel id, 50%', { channel: seed.whatsappChannelId }],
    ['channel id, 1%', { channel: seed.instagramChannelId }],
    ['assignee me, 10%', { assignee: 'me' }],
    ['unassigned, 30%', { assignee: 'unassigned' }],
    ['assignee another user, 7%', { assignee: seed.otherUserId }],
    ['team, 25%', { assignee: seed.teamId }],
    ['manual control, 9%', { control: 'manual' }],
    ['AI control, 91%', { control: 'ai' }],
    ['me + manual + Instagram, 0.01%', { assignee: 'me', control: 'manual', channel: 'instagram' }],
    ['search: start of a last name', { q: seed.searched.lastName.toLowerCase() }],
    ['search: first name, 10% of contacts', { q: 'Maria' }],
    ['search: phone', { q: seed.searched.phone }],
    ['search: email', { q: seed.searched.email }],
  ];
}

interface Measured {
  name: string;
  rows: number;
  service?: Percentiles;
  http?: Percentiles;
}

async function timed<T>(call: () => Promise<T>): Promise<{ ms: number[]; last: T }> {
  let last!: T;
  for (let i = 0; i < warmup; i++) last = await call();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    last = await call();
    ms.push(performance.now() - started);
  }
  return { ms, last };
}

const queryString = (query: Partial<InboxQuery>) =>
  new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();

/** The business and its users, through the operator API of a running service: answers their ids. */
async function provision(url: string): Promise<{ businessId: string; userIds: string[]; email: string }> {
  const { businessId } = await createTenant(url);
  const userIds: string[] = [];
  const email = 'inbox-bench@example.com';
  for (let i = 0; i < 10; i++) {
    const res = await request(`${url}/admin/v1/businesses/${businessId}/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(
        i === 0 ? { email, name: 'Bench User', password: PASSWORD } : { email: `u${i}@example.com`, name: `User ${i}` },
      ),
    });
    const body = (await res.body.json()) as { user: { id: string } };
    if (res.statusCode !== 201) throw new Error(`create user: ${res.statusCode} ${JSON.stringify(body)}`);
    userIds.push(body.user.id);
  }
  return { businessId, userIds, email };
}

/** The service calls of each view, in this process, over the seeded database. */
async function measureService(storage: Storage, seed: InboxSeed): Promise<Map<string, Measured>> {
  const database = await openDatabase({ databaseUrl: storage.env.DATABASE_URL, dataDir: storage.env.DATA_DIR });
  const out = new Map<string, Measured>();
  try {
    const db = database.db;
    const keys = [SECRET] as const;
    // The searches only read contacts: no domain event to hand over.
    const contacts = new ContactsService(db, dashboardLinks('http://bench.test'), { dispatch: async () => {} });
    const inbox = new InboxService(db, new DashboardContactsService(db, keys, contacts), keys);
    const media = new MediaService(
      db,
      createFileStorage('memory://'),
      { secretKeys: keys, publicUrl: '' },
      async () => {
        return undefined;
      },
    );
    const thread = new ThreadService(db, media, keys);
    const viewer = { userId: seed.userId };
    const b = seed.businessId;
    for (const [name, query] of views(seed)) {
      const { ms, last } = await timed(() => inbox.list(b, viewer, { limit: 30, ...query }));
      out.set(name, { name, rows: last.conversations.length, service: percentiles(ms) });
      log(`  service ${name}: ${last.conversations.length} rows, p50 ${percentiles(ms).p50.toFixed(2)} ms`);
    }
    const first = await inbox.list(b, viewer, { limit: 30 });
    const second = await timed(() => inbox.list(b, viewer, { limit: 30, cursor: first.next_cursor! }));
    out.set('second page', {
      name: 'second page',
      rows: second.last.conversations.length,
      service: percentiles(second.ms),
    });
    const unread = await timed(() => inbox.unread(b, viewer));
    out.set('unread total', {
      name: 'unread total',
      rows: unread.last.unread_conversations,
      service: percentiles(unread.ms),
    });
    const id = first.conversations[0].id;
    const one = await timed(() => inbox.get(b, viewer, id));
    out.set('one conversation', { name: 'one conversation', rows: 1, service: percentiles(one.ms) });
    const items = await timed(() => thread.list(b, id, { limit: 50 }));
    out.set('thread', { name: 'thread', rows: items.last.items.length, service: percentiles(items.ms) });
  } finally {
    await database.close();
  }
  return out;
}

/** The same reads over HTTP, signed in as the seeded user. */
async function measureHttp(url: string, email: string, seed: InboxSeed, out: Map<string, Measured>): Promise<void> {
  const signIn = await request(`${url}/dashboard/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  const cookie = String(signIn.headers['set-cookie']).split(';')[0];
  await signIn.body.dump();
  if (signIn.statusCode !== 200) throw new Error(`sign in: ${signIn.statusCode}`);
  const get = async (path: string) => {
    const res = await request(`${url}/dashboard/api${path}`, { headers: { cookie } });
    const body = (await res.body.json()) as Record<string, unknown>;
    if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${JSON.stringify(body)}`);
    return body;
  };
  const record = (name: string, ms: number[]) => (out.get(name)!.http = percentiles(ms));
  for (const [name, query] of views(seed)) {
    record(name, (await timed(() => get(`/conversations?${queryString(query)}`))).ms);
    log(`  HTTP ${name}: p50 ${out.get(name)!.http!.p50.toFixed(2)} ms`);
  }
  const first = (await get('/conversations')) as { conversations: { id: string }[]; next_cursor: string };
  record('second page', (await timed(() => get(`/conversations?${queryString({ cursor: first.next_cursor })}`))).ms);
  record('unread total', (await timed(() => get('/unread'))).ms);
  const id = first.conversations[0].id;
  record('one conversation', (await timed(() => get(`/conversations/${id}`))).ms);
  record('thread', (await timed(() => get(`/conversations/${id}/thread`))).ms);
}

async function runEngine(engine: Engine) {
  const storage = await freshStorage(engine, values.db);
  try {
    let service = await startService(storage, port);
    let provisioned;
    try {
      provisioned = await provision(service.url);
    } finally {
      await service.stop();
    }
    log(`[${engine}] seeding ${conversations} conversations`);
    const database = await openDatabase({ databaseUrl: storage.env.DATABASE_URL, dataDir: storage.env.DATA_DIR });
    const started = performance.now();
    let seed: InboxSeed;
    try {
      seed = await seedInbox(database.db, provisioned.businessId, provisioned.userIds, conversations);
    } finally {
      await database.close();
    }
    const seedSec = (performance.now() - started) / 1000;
    log(`[${engine}] seeded in ${seedSec.toFixed(1)} s; service calls`);
    const measured = await measureService(storage, seed);
    service = await startService(storage, port);
    try {
      log(`[${engine}] HTTP`);
      await measureHttp(service.url, provisioned.email, seed, measured);
    } finally {
      await service.stop();
    }
    return { engine, seedSec, rows: [...measured.values()] };
  } finally {
    await storage.dispose();
  }
}

const fmt = (p?: Percentiles) => (p ? `${p.p50.toFixed(1)} / ${p.p99.toFixed(1)}` : '-');
const loadBefore = loadavg()[0];
const reports = [];
for (const engine of engines) reports.push(await runEngine(engine));
const file = join(tmpdir(), `bench-inbox-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify({ args: values, reports }, null, 2));

const out = [
  `Run of ${new Date().toISOString()}, ${conversations} conversations, ${runs} calls per row after ${warmup}, ` +
    `load average ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after (raw figures: ${file})`,
  '',
  `| view | rows | ${reports.map((r) => `${r.engine} service ms p50 / p99 | ${r.engine} HTTP ms p50 / p99`).join(' | ')} |`,
  `|---|---|${reports.map(() => '---|---|').join('')}`,
];
for (const [i, row] of reports[0].rows.entries())
  out.push(
    `| ${row.name} | ${row.rows} | ${reports.map((r) => `${fmt(r.rows[i].service)} | ${fmt(r.rows[i].http)}`).join(' | ')} |`,
  );
out.push('', `Seeding: ${reports.map((r) => `${r.engine} ${r.seedSec.toFixed(0)} s`).join(', ')}`);
process.stdout.write(out.join('\n') + '\n');
