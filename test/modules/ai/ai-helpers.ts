import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { outboxRepository, type OutboxJob } from '../../../src/jobs/outbox.repository.ts';
import { startFakeGraphApi, inboundMessage, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { startFakeLlmApi, type ChatRequest, type FakeLlmApi, type LlmAnswer } from '../../helpers/fake-llm-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { createWhatsAppChannel, notificationFor, postSigned, type TestChannel } from '../inbound/whatsapp-helpers.ts';
import {
  buildWebhookApp,
  sharedDatabase,
  waitUntil,
  type SharedDatabase,
  type WebhookTestApp,
} from '../webhooks/webhook-harness.ts';

export { waitUntil };

/** What the tests of a file share: a model and a Graph API on loopback, an app over a database it may restart on. */
export interface AiApp {
  shared: SharedDatabase;
  app: WebhookTestApp;
  graph: FakeGraphApi;
  llm: FakeLlmApi;
  /** Builds another app over the same database (the first one closed: a restart). */
  restart(options?: { workers?: boolean; env?: Record<string, string> }): Promise<WebhookTestApp>;
  close(): Promise<void>;
}

/** The model's requests of one business's conversations, and answers for them. */
export interface BusinessLlm {
  /** The chat requests that carry a text the business's customers wrote, since the business was made. */
  readonly requests: ChatRequest[];
  /**
   * Answers for the next requests of any business (the shared fake's queue): for a test that leaves
   * nothing running when it ends; otherwise scriptFor.
   */
  script(...answers: LlmAnswer[]): void;
  /** Answers for the next requests whose customer's last message is `text` (the shared fake's scriptFor). */
  scriptFor(text: string, ...answers: LlmAnswer[]): void;
  /** Embeddings answered for these texts (the shared fake's). */
  vectors: Map<string, number[]>;
  /** Resolves when at least `count` of the business's requests arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ChatRequest[]>;
  /** The shared fake's default answer (a test that changes it puts it back: `aiBusiness` does after each test). */
  reply: (request: ChatRequest) => LlmAnswer;
}

/** One business of an AiApp: a WhatsApp channel whose default agent is `agentId`, and its customers' traffic. */
export interface AiFixture {
  shared: SharedDatabase;
  readonly app: WebhookTestApp;
  graph: FakeGraphApi;
  llm: BusinessLlm;
  tenant: Tenant;
  channel: TestChannel;
  agentId: string;
  /** Builds another app over the same database (the first one closed: a restart). */
  restart(options?: { workers?: boolean; env?: Record<string, string> }): Promise<WebhookTestApp>;
  /** A text from `from` to the channel, as Meta notifies it; answers the notification's status. */
  inbound(text: string, from?: string): Promise<number>;
  /** The texts the Graph API was asked to send to `to` from this business's channel. */
  repliesTo(to?: string): string[];
  /** The conversation of `from` on the channel. */
  conversationOf(from?: string): Promise<string>;
  close(): Promise<void>;
}

export const CUSTOMER = '34600111222';

/** The operator's agent create call. */
export async function createAgent(app: FastifyInstance, businessId: string, body: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/agents`,
    headers: adminHeaders,
    payload: { name: 'Sofia', system_prompt: 'You answer questions about orders.', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`create agent: ${res.body}`);
  return res.json().agent as { id: string } & Record<string, unknown>;
}

export interface AiAppOptions {
  llm?: boolean;
  /** Item and query embeddings from the fake model's /embeddings too. */
  embeddings?: boolean;
  env?: Record<string, string>;
  workers?: boolean;
}

/** An app with LLM_URL set to the fake model unless `llm: false`, over a database of its own. */
export async function aiApp(options: AiAppOptions = {}): Promise<AiApp> {
  const shared = await sharedDatabase();
  const graph = await startFakeGraphApi();
  const llm = await startFakeLlmApi();
  const envOf = (extra: Record<string, string> = {}) => ({
    ...(options.llm === false ? {} : { LLM_URL: llm.url, LLM_API_KEY: 'sk-test-key', LLM_TIMEOUT_SECONDS: '5' }),
    ...(options.embeddings ? { EMBEDDINGS_URL: llm.url, EMBEDDINGS_API_KEY: 'sk-test-key' } : {}),
    ...options.env,
    ...extra,
  });
  const base: AiApp = {
    shared,
    app: await buildWebhookApp(shared, { env: envOf(), workers: options.workers }),
    graph,
    llm,
    async restart(restartOptions = {}) {
      base.app = await buildWebhookApp(shared, { env: envOf(restartOptions.env), workers: restartOptions.workers });
      return base.app;
    },
    async close() {
      await base.app.close();
      await graph.close();
      await llm.close();
      await shared.drop();
    },
  };
  return base;
}

/**
 * A business of `base` with a WhatsApp channel whose default agent is `agent` (quick debounce
 * unless given). Its requests to the model are those that carry its customers' texts, so a file's
 * tests each make one and write texts of their own.
 */
export async function aiBusiness(base: AiApp, options: { agent?: Record<string, unknown> } = {}): Promise<AiFixture> {
  const { app } = base.app;
  const tenant = await createTenant(app);
  const agent = await createAgent(app, tenant.businessId, {
    activation_rules: { debounce_seconds: 0.2 },
    ...options.agent,
  });
  const channel = await createWhatsAppChannel(app, tenant.businessId, {
    apiBaseUrl: base.graph.baseUrl,
    accessToken: base.graph.accessToken,
  });
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
    headers: adminHeaders,
    payload: { agent_id: agent.id },
  });
  if (patched.statusCode !== 200) throw new Error(`channel agent: ${patched.body}`);
  const since = base.llm.requests.length;
  const defaultReply = base.llm.reply;
  const texts = new Set<string>();
  const mine = (request: ChatRequest) =>
    (request.body.messages ?? []).some(
      (m) => m.role === 'user' && [...texts].some((text) => m.content?.includes(text) === true),
    );
  // Each request is judged once, as it is first seen: the list only grows, so indices into it hold.
  const own: ChatRequest[] = [];
  let judged = since;
  const llm: BusinessLlm = {
    get requests() {
      for (; judged < base.llm.requests.length; judged++)
        if (mine(base.llm.requests[judged])) own.push(base.llm.requests[judged]);
      return [...own];
    },
    script: (...answers) => base.llm.script(...answers),
    scriptFor: (text, ...answers) => base.llm.scriptFor(text, ...answers),
    vectors: base.llm.vectors,
    async waitForRequests(count, timeoutMs = 10_000) {
      await waitUntil(() => llm.requests.length >= count, timeoutMs, `the model waited for ${count} requests`);
      return llm.requests;
    },
    get reply() {
      return base.llm.reply;
    },
    set reply(answer) {
      base.llm.reply = answer;
    },
  };
  const path = `/${channel.phoneNumberId}/messages`;
  return {
    shared: base.shared,
    get app() {
      return base.app;
    },
    graph: base.graph,
    llm,
    tenant,
    channel,
    agentId: agent.id,
    restart: (restartOptions) => base.restart(restartOptions),
    async inbound(text, from = CUSTOMER) {
      texts.add(text);
      const res = await postSigned(
        base.app.app,
        notificationFor(channel, {
          contacts: [{ waId: from, name: 'Lucía Pérez' }],
          messages: [inboundMessage(from, 'text', { body: text })],
        }),
        channel.appSecret,
      );
      return res.statusCode;
    },
    repliesTo: (to = CUSTOMER) =>
      base.graph
        .sends()
        .filter((r) => r.path.endsWith(path) && (r.body as { to?: string }).to === to)
        .map((r) => (r.body as { text?: { body?: string } }).text?.body ?? ''),
    async conversationOf(from = CUSTOMER) {
      const { rows } = await sql<{ id: string }>`select c.id from conversations c
        join contacts k on k.business_id = c.business_id and k.id = c.contact_id
        where c.business_id = ${tenant.businessId} and k.phone_number = ${from}`.execute(base.app.database.db);
      if (!rows[0]) throw new Error(`no conversation of ${from}`);
      return rows[0].id;
    },
    // The app is the file's; what a test changed of the shared model is put back.
    close: async () => {
      base.llm.reply = defaultReply;
    },
  };
}

/** An app of its own and one business in it (AiApp and aiBusiness), all closed together. */
export async function aiFixture(options: AiAppOptions & { agent?: Record<string, unknown> } = {}): Promise<AiFixture> {
  const base = await aiApp(options);
  const fixture = await aiBusiness(base, { agent: options.agent });
  const closeBusiness = fixture.close;
  return Object.defineProperties(fixture, {
    close: { value: () => closeBusiness().then(() => base.close()) },
  });
}

/** The conversation's AI runs through the operator API. */
export async function runsOf(f: AiFixture, conversationId: string, query = '') {
  const res = await f.app.app.inject({
    url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversationId}/ai-runs${query}`,
    headers: adminHeaders,
  });
  if (res.statusCode !== 200) throw new Error(`ai runs: ${res.statusCode} ${res.body}`);
  return res.json().runs as Record<string, any>[];
}

/** The conversation's exported events, oldest first. */
export async function eventsOf(f: AiFixture, conversationId: string) {
  const { rows } = await sql<{
    type: string;
    actor_type: string;
    agent_id: string | null;
    data: Record<string, unknown>;
  }>`
    select type, actor_type, agent_id, data from events
    where business_id = ${f.tenant.businessId} and conversation_id = ${conversationId}
    order by created_at, id`.execute(f.app.database.db);
  return rows;
}

/** Waits until `count` replies went to `to`, then a little more, and answers them all. */
export async function waitForReplies(f: AiFixture, count: number, to = CUSTOMER, timeoutMs = 10_000) {
  await waitUntil(
    () => f.repliesTo(to).length >= count,
    timeoutMs,
    `waited for ${count} replies, got ${f.repliesTo(to).length}`,
  );
  return f.repliesTo(to);
}

/** Changes the agent through the public API (its tools, prompt_config, …). */
export async function patchAgent(f: AiFixture, agent: Record<string, unknown>) {
  const res = await f.app.app.inject({
    method: 'PATCH',
    url: `/external/v2/agents/${f.agentId}`,
    headers: f.tenant.headers,
    payload: { agent },
  });
  if (res.statusCode !== 200) throw new Error(`patch agent: ${res.statusCode} ${res.body}`);
  return res.json().agent as Record<string, unknown>;
}

/**
 * Waits until the conversation's latest reply run has ended, and answers it (a resolution's sentiment
 * is a run of its own kind that may start after it).
 */
export async function endedRun(f: AiFixture, conversationId: string, timeoutMs = 10_000) {
  let run: Record<string, any> | undefined;
  await waitUntil(
    async () => {
      [run] = (await runsOf(f, conversationId)).filter((r) => r.kind === 'reply');
      return run !== undefined && run.status !== 'running';
    },
    timeoutMs,
    'waited for the run to end',
  );
  return run!;
}

/** Lets the worker run for `ms` (to show that nothing more happens). */
export const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The app of a file whose tests crash processes: one database, no workers; after each test its
 * business is closed and the app built again over the same database, as a restarted process would
 * be. Answers the maker of each test's business.
 */
export function crashTestApp(): (options?: { agent?: Record<string, unknown> }) => Promise<AiFixture> {
  let base: AiApp | undefined;
  let current: AiFixture | undefined;
  beforeAll(async () => {
    base = await aiApp({ workers: false });
  }, 60_000);
  afterAll(() => base?.close());
  afterEach(async () => {
    await current?.close();
    current = undefined;
    await base!.app.close();
    await base!.restart({ workers: false });
  });
  return async (options = {}) => (current = await aiBusiness(base!, options));
}

/** A job of `kind` claimed as a worker claims it, once due, under a lease of `leaseSeconds` (a crash's ends soon). */
export async function claimJob(fixture: AiFixture, kind: string, leaseSeconds = 1): Promise<OutboxJob> {
  let claimed: OutboxJob[] = [];
  await waitUntil(async () => {
    claimed = await outboxRepository.claim(fixture.app.database.db, kind, 1, leaseSeconds);
    return claimed.length === 1;
  });
  return claimed[0];
}
