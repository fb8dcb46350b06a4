import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { startFakeGraphApi, inboundMessage, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
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

/** Everything an AI agent test uses: a model and a Graph API on loopback, an app over a database it may restart on. */
export interface AiFixture {
  shared: SharedDatabase;
  app: WebhookTestApp;
  graph: FakeGraphApi;
  llm: FakeLlmApi;
  tenant: Tenant;
  channel: TestChannel;
  agentId: string;
  /** Builds another app over the same database (the first one closed: a restart). */
  restart(options?: { workers?: boolean; env?: Record<string, string> }): Promise<WebhookTestApp>;
  /** A text from `from` to the channel, as Meta notifies it; answers the notification's status. */
  inbound(text: string, from?: string): Promise<number>;
  /** The texts the Graph API was asked to send to `to`. */
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

/**
 * A business with a WhatsApp channel whose default agent is `agent` (quick debounce unless given),
 * an app with LLM_URL set to the fake model unless `llm: false`.
 */
export async function aiFixture(
  options: {
    agent?: Record<string, unknown>;
    llm?: boolean;
    /** Item and query embeddings from the fake model's /embeddings too. */
    embeddings?: boolean;
    env?: Record<string, string>;
    workers?: boolean;
  } = {},
): Promise<AiFixture> {
  const shared = await sharedDatabase();
  const graph = await startFakeGraphApi();
  const llm = await startFakeLlmApi();
  const envOf = (extra: Record<string, string> = {}) => ({
    ...(options.llm === false ? {} : { LLM_URL: llm.url, LLM_API_KEY: 'sk-test-key', LLM_TIMEOUT_SECONDS: '5' }),
    ...(options.embeddings ? { EMBEDDINGS_URL: llm.url, EMBEDDINGS_API_KEY: 'sk-test-key' } : {}),
    ...options.env,
    ...extra,
  });
  let app = await buildWebhookApp(shared, { env: envOf(), workers: options.workers });
  const tenant = await createTenant(app.app);
  const agent = await createAgent(app.app, tenant.businessId, {
    activation_rules: { debounce_seconds: 0.2 },
    ...options.agent,
  });
  const channel = await createWhatsAppChannel(app.app, tenant.businessId, {
    apiBaseUrl: graph.baseUrl,
    accessToken: graph.accessToken,
  });
  const patched = await app.app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
    headers: adminHeaders,
    payload: { agent_id: agent.id },
  });
  if (patched.statusCode !== 200) throw new Error(`channel agent: ${patched.body}`);
  const fixture: AiFixture = {
    shared,
    app,
    graph,
    llm,
    tenant,
    channel,
    agentId: agent.id,
    async restart(restartOptions = {}) {
      app = await buildWebhookApp(shared, { env: envOf(restartOptions.env), workers: restartOptions.workers });
      fixture.app = app;
      return app;
    },
    async inbound(text, from = CUSTOMER) {
      const res = await postSigned(
        app.app,
        notificationFor(channel, {
          contacts: [{ waId: from, name: 'Lucía Pérez' }],
          messages: [inboundMessage(from, 'text', { body: text })],
        }),
        channel.appSecret,
      );
      return res.statusCode;
    },
    repliesTo: (to = CUSTOMER) =>
      graph
        .sends()
        .filter((r) => (r.body as { to?: string }).to === to)
        .map((r) => (r.body as { text?: { body?: string } }).text?.body ?? ''),
    async conversationOf(from = CUSTOMER) {
      const { rows } = await sql<{ id: string }>`select c.id from conversations c
        join contacts k on k.business_id = c.business_id and k.id = c.contact_id
        where c.business_id = ${tenant.businessId} and k.phone_number = ${from}`.execute(app.database.db);
      if (!rows[0]) throw new Error(`no conversation of ${from}`);
      return rows[0].id;
    },
    async close() {
      await app.close();
      await graph.close();
      await llm.close();
      await shared.drop();
    },
  };
  return fixture;
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
