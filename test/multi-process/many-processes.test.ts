import { randomBytes, randomInt } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../helpers/fake-graph-api.ts';
import { lastUserText, startFakeLlmApi, type FakeLlmApi } from '../helpers/fake-llm-api.ts';
import { ADMIN_TOKEN, engine, postgresTestDatabase, type PostgresTestDatabase } from '../helpers/test-app.ts';
import { Receiver, waitUntil } from '../modules/webhooks/webhook-harness.ts';
import { adminHeaders, createCloudChannel, type CloudChannel } from './cloud-channels.ts';
import { expectPaceKeptAcross, processName } from './paced-sends.ts';
import { bundleServer, startServerProcess, type ServerProcess } from './server-processes.ts';

// Three server processes on one PostgreSQL database (and one Redis when TEST_REDIS_URL is set),
// driven at once through every path that has a worker or a cache: what ARCHITECTURE.md promises of
// several processes (the outbox, webhook deliveries, rate limits, secrets' caches), checked on the
// real thing. The processes start once, together; the tests run in order against them, the last
// killing one of them.

const SECRET_KEY = 'test-secret-key-0123456789-0123456789';
const admin = adminHeaders;
const CONTACTS = 9;
const INBOUND_PER_CONTACT = 4;
const EXPORTS_PER_WINDOW = 20;

let postgres: PostgresTestDatabase;
let bundle: Awaited<ReturnType<typeof bundleServer>>;
let servers: ServerProcess[] = [];
let graph: FakeGraphApi;
let receiver: Receiver;
let llm: FakeLlmApi;
let db: pg.Pool;
let businessId: string;
let apiKey: string;
let channel: CloudChannel;
const phones = Array.from({ length: CONTACTS }, () => `1415${randomInt(2_000_000, 9_999_999)}`);

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = api(),
) {
  const res = await fetch(server.url + path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  // The answers of many routes, read field by field.
  const json: any = text ? JSON.parse(text) : undefined;
  return { status: res.status, json };
}
const api = (key = apiKey) => ({ 'x-api-key': key, 'content-type': 'application/json' });

/** Posts a notification signed with the channel's app secret, as Meta does, to one process. */
async function notify(server: ServerProcess, body: unknown): Promise<number> {
  const { payload, headers } = signedNotification(body, channel.appSecret);
  const res = await fetch(`${server.url}/channels/whatsapp/webhook`, { method: 'POST', headers, body: payload });
  await res.arrayBuffer();
  return res.status;
}
const notification = (messages: Record<string, unknown>[], from: string) =>
  metaNotification({
    phoneNumberId: channel.phoneNumberId,
    displayPhoneNumber: channel.identifier,
    contacts: [{ waId: from, name: `Customer ${from}` }],
    messages,
  });

const send = (server: ServerProcess, to: string, text: string) =>
  call(server, 'POST', '/external/v2/messages/send', {
    to: `+${to}`,
    from: 'whatsapp',
    type: 'text',
    content: { text },
    channel_uuid: channel.id,
  });

/** The fake's sends of one message (our id travels as biz_opaque_callback_data). */
const sendsOf = (messageId: string) =>
  graph.sends().filter((r) => (r.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data === messageId);

const messageStatuses = async (ids: string[]) =>
  (
    await db.query<{ id: string; status: string; error: string | null }>(
      'select id, status, error from messages where id = any($1)',
      [ids],
    )
  ).rows;

describe.runIf(engine === 'postgres')('many server processes on one PostgreSQL', () => {
  beforeAll(async () => {
    [postgres, bundle, graph, receiver, llm] = await Promise.all([
      postgresTestDatabase(),
      bundleServer(),
      startFakeGraphApi(),
      Receiver.start(),
      startFakeLlmApi(),
    ]);
    if (postgres.schema) throw new Error('the processes need a database of their own (CREATE DATABASE was refused)');
    db = new pg.Pool({ connectionString: postgres.databaseUrl, max: 2 });
    const dataDir = `${bundle.entry}.data`;
    const env = {
      DATABASE_URL: postgres.databaseUrl,
      SECRET_KEY,
      ADMIN_TOKEN,
      // One file store for all: a media file fetched by one process is served by every other.
      DATA_DIR: dataDir,
      // The fake Graph API and the webhook receiver listen on loopback, a private target.
      ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
      RATE_LIMIT_EXPORTS_PER_MINUTE: String(EXPORTS_PER_WINDOW),
      LLM_URL: llm.url,
      LLM_API_KEY: 'sk-test-key',
      ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
    };
    const t0 = performance.now();
    servers = await Promise.all(
      [0, 1, 2].map((i) => startServerProcess(bundle.entry, { ...env, PGAPPNAME: processName(i) })),
    );
    console.info(`3 processes started in ${Math.round(performance.now() - t0)} ms`);

    const business = await call(servers[0], 'POST', '/admin/v1/businesses', { name: 'Acme' }, admin);
    businessId = business.json.business.id;
    apiKey = (await call(servers[1], 'POST', `/admin/v1/businesses/${businessId}/api-keys`, {}, admin)).json.key;
    channel = await createCloudChannel(servers[2], businessId, graph);
    const webhook = await call(
      servers[0],
      'POST',
      `/admin/v1/businesses/${businessId}/webhooks`,
      { event: 'message_created', url: `${receiver.url}/hook` },
      admin,
    );
    expect(webhook.status, JSON.stringify(webhook.json)).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await db?.end();
    await Promise.all([graph?.close(), receiver?.close(), llm?.close(), bundle?.remove()]);
    await postgres?.drop();
  });

  // Each contact's messages go one after another, each to a different process and, at the same
  // moment, again to another one (Meta retries a notification it saw no answer to); the contacts
  // go at once. The second message of each is a document, downloaded by a media job.
  const inboundTexts = (c: number) => Array.from({ length: INBOUND_PER_CONTACT }, (_, m) => `c${c}-in${m}`);
  const mediaIds: string[] = [];

  it('stores inbound notifications posted to different processes once each, in order, and fetches each file once', async () => {
    await Promise.all(
      phones.map(async (phone, c) => {
        for (const [m, text] of inboundTexts(c).entries()) {
          let message: Record<string, unknown>;
          if (m === 1) {
            const media = graph.addMedia({ bytes: Buffer.from(`%PDF-1.4 ${text}`), mimeType: 'application/pdf' });
            mediaIds.push(media.id);
            message = inboundMessage(phone, 'document', {
              id: media.id,
              mime_type: 'application/pdf',
              sha256: media.sha256,
              filename: `${text}.pdf`,
              caption: text,
            });
          } else {
            message = inboundMessage(phone, 'text', { body: text });
          }
          const body = notification([message], phone);
          const statuses = await Promise.all([
            notify(servers[(c + m) % 3], body),
            notify(servers[(c + m + 1) % 3], body),
          ]);
          expect(statuses).toEqual([200, 200]);
        }
      }),
    );

    const { rows } = await db.query<{ phone_number: string; texts: string[]; conversations: string }>(
      `select c.phone_number, array_agg(m.text order by m.created_at, m.id) as texts,
              count(distinct m.conversation_id) as conversations
         from messages m join contacts c on c.id = m.contact_id
        where m.direction = 'inbound' group by c.phone_number`,
    );
    expect(rows).toHaveLength(CONTACTS);
    for (const row of rows) {
      const c = phones.indexOf(row.phone_number);
      expect(row.texts).toEqual(inboundTexts(c));
      expect(Number(row.conversations)).toBe(1);
    }

    // Every file downloaded, each by one process, once.
    await waitUntil(
      async () => (await db.query(`select 1 from media where storage_key is not null`)).rowCount === CONTACTS,
      15_000,
      'the media jobs did not finish',
    );
    for (const id of mediaIds)
      expect(graph.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${id}`))).toHaveLength(1);
  });

  const sentTexts = (c: number) => [`c${c}-out0`, `c${c}-out1`];
  const sentIds: string[] = [];

  it('sends each message accepted by any process exactly once', async () => {
    await Promise.all(
      phones.map(async (phone, c) => {
        for (const [k, text] of sentTexts(c).entries()) {
          const res = await send(servers[(c + k) % 3], phone, text);
          expect(res.status, JSON.stringify(res.json)).toBe(200);
          sentIds.push(res.json.message.uuid);
        }
      }),
    );
    await waitUntil(
      async () => (await messageStatuses(sentIds)).every((m) => m.status !== 'PENDING'),
      15_000,
      'sends still pending',
    );
    expect((await messageStatuses(sentIds)).filter((m) => m.status !== 'SENT')).toEqual([]);
    for (const id of sentIds) expect(sendsOf(id)).toHaveLength(1);
    expect(graph.sends()).toHaveLength(sentIds.length);
  });

  it('delivers one webhook per message, in order per conversation', async () => {
    const expected = CONTACTS * (INBOUND_PER_CONTACT + 2);
    await receiver.waitFor(expected, 15_000);
    // Anything late would be a repeat: give it a moment to show.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.calls).toHaveLength(expected);
    const byContact = new Map<string, string[]>();
    for (const call of receiver.calls) {
      const { payload } = JSON.parse(call.body) as { payload: { text: string; contact: { uuid: string } } };
      byContact.set(payload.contact.uuid, [...(byContact.get(payload.contact.uuid) ?? []), payload.text]);
    }
    expect(byContact.size).toBe(CONTACTS);
    for (const texts of byContact.values()) {
      const c = Number(/^c(\d+)-/.exec(texts[0])![1]);
      expect(texts).toEqual([...inboundTexts(c), ...sentTexts(c)]);
    }
    expect(new Set(receiver.calls.map((call) => call.headers['webhook-id'])).size).toBe(expected);
  });

  it("runs an AI agent's answer once per customer message, whichever processes the notification reached", async () => {
    // Another business, whose channel's default agent answers: its sends and messages stay apart.
    const other = await call(servers[1], 'POST', '/admin/v1/businesses', { name: 'Agents' }, admin);
    const otherId = other.json.business.id as string;
    const agent = await call(
      servers[2],
      'POST',
      `/admin/v1/businesses/${otherId}/agents`,
      { name: 'Helper', activation_rules: { debounce_seconds: 0.2 } },
      admin,
    );
    expect(agent.status, JSON.stringify(agent.json)).toBe(201);
    const { phoneNumberId, appSecret } = await createCloudChannel(servers[0], otherId, graph, {
      agent_id: agent.json.agent.id,
    });
    const customers = Array.from({ length: 3 }, (_, i) => ({
      phone: `1416${randomInt(2_000_000, 9_999_999)}`,
      text: `question ${i} ${randomBytes(4).toString('hex')}`,
    }));
    await Promise.all(
      customers.map(async ({ phone, text }, i) => {
        const body = metaNotification({
          phoneNumberId,
          contacts: [{ waId: phone, name: `Customer ${phone}` }],
          messages: [inboundMessage(phone, 'text', { body: text })],
        });
        const { payload, headers } = signedNotification(body, appSecret);
        const post = (server: ServerProcess) =>
          fetch(`${server.url}/channels/whatsapp/webhook`, { method: 'POST', headers, body: payload });
        const answers = await Promise.all([post(servers[i % 3]), post(servers[(i + 1) % 3])]);
        expect(answers.map((a) => a.status)).toEqual([200, 200]);
      }),
    );
    const repliesTo = (phone: string) =>
      graph.sends().filter((r) => r.path.includes(`/${phoneNumberId}/`) && (r.body as { to?: string }).to === phone);
    await waitUntil(() => customers.every((c) => repliesTo(c.phone).length > 0), 15_000, 'the agent did not answer');
    // Anything late would be a second run: give it a moment to show.
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const { phone, text } of customers) {
      expect(llm.requests.filter((r) => lastUserText(r).includes(text))).toHaveLength(1);
      expect(repliesTo(phone)).toHaveLength(1);
    }
  });

  it('shares the rate limits: one budget per business across the processes', async () => {
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const answers = await Promise.all(
      Array.from({ length: EXPORTS_PER_WINDOW + 10 }, (_, i) =>
        call(servers[i % 3], 'GET', `/external/v2/messages?since=${since}&limit=1`),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s === 200),
      JSON.stringify(answers[0]),
    ).toHaveLength(EXPORTS_PER_WINDOW);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });

  it('a key revoked on one process is refused by the others as soon as they hear of it', async () => {
    // The others forget the key when PostgreSQL delivers the revocation's NOTIFY, about a millisecond
    // after its commit: a request that reaches another process before that is still served. Each
    // process is asked until it refuses; the cache alone would serve the key for a minute.
    const lateMs: number[] = [];
    for (let round = 0; round < 3; round++) {
      const created = await call(servers[0], 'POST', `/admin/v1/businesses/${businessId}/api-keys`, {}, admin);
      const key = created.json.key as string;
      const lookup = `/external/v2/contacts?phone=%2B${phones[0]}`;
      // Cached by the two others first.
      for (const server of servers.slice(1))
        expect((await call(server, 'GET', lookup, undefined, api(key))).status).toBe(200);
      const revoked = await call(
        servers[round % 3],
        'DELETE',
        `/admin/v1/businesses/${businessId}/api-keys/${created.json.api_key.id}`,
        undefined,
        { authorization: admin.authorization },
      );
      expect(revoked.status).toBe(200);
      const answered = performance.now();
      await Promise.all(
        servers.map(async (server) => {
          while ((await call(server, 'GET', lookup, undefined, api(key))).status !== 401) {
            expect(performance.now() - answered).toBeLessThan(1_000);
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          lateMs.push(performance.now() - answered);
        }),
      );
    }
    console.info(`revoked keys refused by every process within ${Math.max(...lateMs).toFixed(0)} ms`);
  });

  it("a channel's credentials rotated on one process are used by the others at their next send", async () => {
    const rotated = `EAAG${randomBytes(16).toString('hex')}`;
    graph.acceptAccessToken(rotated);
    const patched = await call(
      servers[0],
      'PATCH',
      `/admin/v1/businesses/${businessId}/channels/${channel.id}`,
      { provider: { access_token: rotated } },
      admin,
    );
    expect(patched.status, JSON.stringify(patched.json)).toBe(200);
    const ids = await Promise.all(
      [1, 2].map(async (s) => (await send(servers[s], phones[s], `rotated via ${s}`)).json.message.uuid as string),
    );
    await waitUntil(async () => (await messageStatuses(ids)).every((m) => m.status === 'SENT'), 10_000);
    for (const id of ids) expect(sendsOf(id).map((r) => r.headers.authorization)).toEqual([`Bearer ${rotated}`]);
  });

  // One try more: on a starved machine a statement slower than one interval can release two turns'
  // calls together (send.job.ts); without the shared store every try fails.
  it("keeps a channel's pace across the processes sending from it", { retry: 1 }, async () => {
    // In Redis with TEST_REDIS_URL, else in PostgreSQL (which channel-pace.test.ts checks otherwise).
    await expectPaceKeptAcross(servers.slice(0, 2), db, graph);
  });

  it('a process killed while holding claimed jobs has them taken over by the others', async () => {
    const victim = servers[2];
    // Provider calls hang for a while: the victim's jobs are in hand when it dies. (A job another
    // process claimed first finishes when its call answers.)
    graph.setDelay(4_000);
    const files = phones.slice(0, 3).map((phone, i) => {
      const media = graph.addMedia({ bytes: Buffer.from(`%PDF-1.4 killed ${i}`), mimeType: 'application/pdf' });
      const content = { id: media.id, mime_type: 'application/pdf', sha256: media.sha256, filename: `k${i}.pdf` };
      return { phone, media, message: inboundMessage(phone, 'document', content) };
    });
    for (const file of files) expect(await notify(victim, notification([file.message], file.phone))).toBe(200);
    const sends = await Promise.all(phones.slice(3, 6).map((phone, i) => send(victim, phone, `killed ${i}`)));
    const killedSends = sends.map((s) => s.json.message.uuid as string);
    // The victim's worker is woken by its own commits; the others poll every 250 ms.
    await waitUntil(
      () =>
        files.every((f) => graph.requests.some((r) => r.path.endsWith(`/${f.media.id}`))) &&
        killedSends.every((id) => sendsOf(id).length === 1),
      10_000,
      'the jobs were not started',
    );
    const { rows: held } = await db.query<{ id: string; locked_by: number }>(
      `select id, locked_by from outbox where state = 'running' and kind in ('media_fetch', 'send')`,
    );

    const killedAt = Date.now();
    await victim.kill();
    servers = servers.slice(0, 2);
    graph.setDelay(0);
    await waitUntil(
      async () =>
        (await db.query(`select 1 from outbox where id = any($1) and state = 'running'`, [held.map((j) => j.id)]))
          .rowCount === 0 &&
        (await db.query(`select 1 from media where storage_key is not null`)).rowCount === CONTACTS + files.length,
      15_000,
      'the jobs of the killed process were not taken over',
    );
    const takenOverMs = Date.now() - killedAt;
    // The victim's were those whose worker session is gone.
    const { rows: alive } = await db.query<{ pid: number }>('select pid from pg_stat_activity');
    const orphaned = held.filter((job) => !alive.some((session) => session.pid === job.locked_by));
    expect(orphaned.length).toBeGreaterThan(0);
    // A download may run again: done by another process. A send whose call had started may have
    // reached the provider: given up as outcome unknown, never sent twice.
    for (const message of await messageStatuses(killedSends)) {
      expect(message.status === 'SENT' || /outcome unknown/.test(message.error ?? ''), JSON.stringify(message)).toBe(
        true,
      );
      expect(sendsOf(message.id)).toHaveLength(1);
    }
    console.info(`${orphaned.length} jobs of the killed process taken over in ${takenOverMs} ms`);
  });
});
