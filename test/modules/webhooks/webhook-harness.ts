import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Value } from 'typebox/value';
import { expect } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import type { Config } from '../../../src/config.ts';
import { openDatabase, type DatabaseHandle, type Db } from '../../../src/db/database.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import type { Clock } from '../../../src/lib/clock.ts';
import { MessageCreatedBody } from '../../../src/modules/webhooks/webhook-payload.schemas.ts';
import type { WebhookWorkerOptions } from '../../../src/modules/webhooks/webhook-worker.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { engine, pgliteSnapshot, postgresTestDatabase, testConfig } from '../../helpers/test-app.ts';

/** A clock the test moves by hand. */
export class TestClock implements Clock {
  constructor(public ms = Date.now()) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** One call the receiver got. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver does with a call: answer (status, headers, body), or hang, or drop the connection. */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang' | 'destroy';

/** A real HTTP endpoint on loopback, as a business would run; answers 200 unless told otherwise. */
export class Receiver {
  readonly calls: Received[] = [];
  respond: (call: Received, index: number) => Reply = () => ({ status: 200, body: 'ok' });
  private readonly hanging = new Set<ServerResponse>();
  private constructor(private readonly server: Server) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    const receiver = new Receiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const call = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        receiver.calls.push(call);
        const reply = receiver.respond(call, receiver.calls.length - 1);
        if (reply === 'hang') receiver.hanging.add(res);
        else if (reply === 'destroy') req.socket.destroy();
        else res.writeHead(reply.status, reply.headers).end(reply.body ?? '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves when at least `count` calls arrived. */
  async waitFor(count: number, timeoutMs = 10_000): Promise<Received[]> {
    await waitUntil(
      () => this.calls.length >= count,
      timeoutMs,
      `receiver waited for ${count} calls, got ${this.calls.length}`,
    );
    return this.calls;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  message = 'condition not met',
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(message);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A database of the current engine that several apps can share (a fresh database on PostgreSQL). */
export interface SharedDatabase {
  open(): Promise<DatabaseHandle>;
  drop(): Promise<void>;
}

export async function sharedDatabase(): Promise<SharedDatabase> {
  if (engine === 'pglite') {
    // PGlite is one process's database: apps "share" it by sharing the handle.
    const handle = await openDatabase({ dataDir: 'memory://', snapshot: await pgliteSnapshot() });
    await migrateToLatest(handle.db);
    const shared = { ...handle, close: async () => undefined };
    return { open: async () => shared, drop: () => handle.close() };
  }
  const { databaseUrl, schema, drop } = await postgresTestDatabase();
  // A copy of the run's migrated template needs no migrations; a new schema does.
  if (schema) {
    const first = await openDatabase({ databaseUrl, schema, poolSize: 5 });
    await migrateToLatest(first.db, schema);
    await first.close();
  }
  return { open: () => openDatabase({ databaseUrl, schema, poolSize: 10 }), drop };
}

export interface WebhookTestApp {
  app: FastifyInstance;
  database: DatabaseHandle;
  config: Config;
  close(): Promise<void>;
}

/** The real app with a test clock, over a shared database; private targets allowed unless env says otherwise. */
export async function buildWebhookApp(
  shared: SharedDatabase,
  options: {
    clock?: Clock;
    env?: Record<string, string>;
    worker?: WebhookWorkerOptions;
    workers?: boolean;
    /** Where the app logs; none unless given. */
    log?: FastifyBaseLogger;
  } = {},
): Promise<WebhookTestApp> {
  const config = testConfig({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true', ...options.env });
  const database = await shared.open();
  const app = await buildApp(config, {
    database,
    logger: false,
    loggerInstance: options.log,
    workers: options.workers,
    clock: options.clock,
    webhookWorker: { pollMs: 50, random: () => 0.5, ...options.worker },
  });
  await app.ready();
  return {
    app,
    database,
    config,
    async close() {
      await app.close();
      await database.close();
    },
  };
}

/** Registers a webhook through the operator API; returns its record and secret. */
export async function createWebhook(app: FastifyInstance, businessId: string, body: Record<string, unknown>) {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/webhooks`,
    headers: adminHeaders,
    payload: { event: 'message_created', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`create webhook: ${res.statusCode} ${res.body}`);
  return res.json<{ webhook: { id: string } & Record<string, unknown>; secret: string }>();
}

type MessageOverrides = Parameters<typeof insertMessage>[3];

/**
 * Stores a message as the inbound and sending paths do: the rows, then WebhookEvents.messageCreated
 * inside the same transaction, then wake() after the commit.
 */
export async function storeMessage(
  t: WebhookTestApp,
  businessId: string,
  options: {
    conversation?: { id: string; contact_id: string; channel: string };
    message?: MessageOverrides;
    media?: { filename: string; content_type: string }[];
  } = {},
) {
  const events = t.app.services.webhooks.events;
  const out = await t.database.db.transaction().execute(async (trx) => {
    let conversation = options.conversation;
    if (!conversation) {
      const contact = await insertContact(trx, businessId, {
        phone_number: '34600111222',
        tags: ['vip'],
        source: 'whatsapp',
      });
      conversation = await insertConversation(trx, businessId, contact.id);
    }
    const message = await insertMessage(trx, businessId, conversation, {
      sender_address: '34600111222',
      recipient_address: '15550001111',
      ...options.message,
    });
    for (const file of options.media ?? []) {
      await trx
        .insertInto('media')
        .values({
          business_id: businessId,
          message_id: message.id,
          filename: file.filename,
          content_type: file.content_type,
          storage_key: `k/${message.id}`,
        })
        .execute();
    }
    const queued = await events.messagesCreated(trx, businessId, [message.id]);
    return { conversation, message, queued };
  });
  if (out.queued) events.wake();
  return out;
}

/**
 * The webhook's delivery log once it has at least `count` attempts (attempts are recorded just after the
 * call returns).
 */
export async function logOf(app: FastifyInstance, businessId: string, webhookId: string, count = 1, query = '') {
  let entries: Record<string, unknown>[] = [];
  await waitUntil(
    async () => {
      const res = await app.inject({
        method: 'GET',
        url: `/admin/v1/businesses/${businessId}/webhooks/${webhookId}/deliveries${query}`,
        headers: adminHeaders,
      });
      entries = res.json().deliveries;
      return entries.length >= count;
    },
    10_000,
    `log of ${webhookId} has fewer than ${count} attempts`,
  );
  return entries;
}

/**
 * Checks that the business holds one message_created delivery per message of `messageIds`, each
 * with a body of the contract's shape (MessageCreatedBody), and nothing else.
 */
export async function expectDeliveriesFor(db: Db, businessId: string, messageIds: string[]): Promise<void> {
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['message_id', 'payload'])
    .where('business_id', '=', businessId)
    .execute();
  expect(deliveries.map((d) => d.message_id).sort()).toEqual([...messageIds].sort());
  for (const { message_id: id, payload } of deliveries) {
    const body = { event: 'message_created', payload };
    expect(
      Value.Check(MessageCreatedBody, body),
      `${id}: ${JSON.stringify([...Value.Errors(MessageCreatedBody, body)].slice(0, 3))}`,
    ).toBe(true);
  }
}

/*
 * For the model tests (webhooks.fuzz, retries.fuzz): each run has two businesses of its own, and its
 * webhooks' paths start with /r<run>/, so that calls of earlier runs (retries come due as a clock
 * moves on) are told apart.
 */

/** A model run: its number, its two businesses with one conversation each, and the receiver calls already checked. */
export interface ModelRun {
  run: number;
  tenants: Tenant[];
  conversations: { id: string; contact_id: string; channel: string }[];
  seen: number;
}

/**
 * A new run's two businesses, each with a first message stored before any webhook: the run's later
 * messages go to its contact and conversation.
 */
export async function newModelRun(t: WebhookTestApp, receiver: Receiver, run: number): Promise<ModelRun> {
  const tenants = [await createTenant(t.app, 'Acme'), await createTenant(t.app, 'Other')];
  const conversations = [];
  for (const tenant of tenants) conversations.push((await storeMessage(t, tenant.businessId)).conversation);
  return { run, tenants, conversations, seen: receiver.calls.length };
}

/** The calls to the run's webhooks since the last check; `take` makes them checked. */
export function callsOfRun(receiver: Receiver, r: ModelRun, take = false): Received[] {
  const calls = receiver.calls.slice(r.seen).filter((c) => c.url.startsWith(`/r${r.run}/`));
  if (take) r.seen = receiver.calls.length;
  return calls;
}

/**
 * Whether the worker still has something to do for the run's businesses at `nowIso`: a delivery in
 * hand, or one due (not held, its time come) for an enabled webhook. What is left waits for a retry,
 * or belongs to a disabled webhook.
 */
export async function deliveriesInHand(db: Db, r: ModelRun, nowIso: string): Promise<boolean> {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', (join) =>
      join.onRef('w.business_id', '=', 'd.business_id').onRef('w.id', '=', 'd.webhook_id'),
    )
    .select('d.id')
    .where(
      'd.business_id',
      'in',
      r.tenants.map((tenant) => tenant.businessId),
    )
    .where((eb) =>
      eb.or([
        eb('d.state', '=', 'running'),
        eb.and([
          eb('d.state', '=', 'pending'),
          eb('d.held', '=', false),
          eb('d.next_attempt_at', '<=', nowIso),
          eb('w.enabled', '=', true),
        ]),
      ]),
    )
    .limit(1)
    .execute();
  return rows.length > 0;
}
