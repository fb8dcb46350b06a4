import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../src/db/database.ts';
import { SENTIMENT_INSTRUCTION } from '../src/modules/ai/sentiment.job.ts';
import { inboundMessage, type FakeGraphApi } from '../test/helpers/fake-graph-api.ts';
import type { ChatRequest, FakeLlmApi, LlmAnswer } from '../test/helpers/fake-llm-api.ts';
import { adminHeaders, createTenant } from '../test/helpers/tenants.ts';
import { createWhatsAppChannel, notificationFor, postSigned } from '../test/modules/inbound/whatsapp-helpers.ts';
import type { EvalCase, ScriptedAnswer } from './case.schema.ts';

/** The service a case runs against: the app, its database, the channel's API on loopback, the model. */
export interface EvalService {
  app: FastifyInstance;
  db: Db;
  graph: FakeGraphApi;
  /** The scripted model on loopback; absent when a real model answers. */
  scripted?: FakeLlmApi;
  /** How long a turn may take: seconds for the scripted model, a minute for a real one. */
  turnTimeoutMs: number;
}

export interface CaseResult {
  name: string;
  file?: string;
  failures: string[];
  replies: string[];
  events: string[];
  runs: { status: string; outcome: string | null }[];
}

const PUBLIC = '/external/v2';
let customers = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** A conversation's sentiment, asked for after a resolution: no turn's script answers it. */
const isSentiment = (request: ChatRequest) => request.body.messages?.[0]?.content === SENTIMENT_INSTRUCTION;

const toAnswer = (a: ScriptedAnswer): LlmAnswer =>
  'text' in a ? { text: a.text } : { toolCalls: a.tool_calls.map((c) => ({ name: c.name, arguments: c.arguments })) };

/**
 * Runs one case in a business of its own: an agent as the case defines it, a WhatsApp channel whose
 * default agent it is, a customer who writes each turn; then compares what the business sees with
 * the case's expectations. Answers the failures (none: the case passed).
 */
export async function runCase(service: EvalService, c: EvalCase & { file?: string }): Promise<CaseResult> {
  const { app, db, graph, scripted } = service;
  const tenant = await createTenant(app, `Eval ${c.name}`.slice(0, 100));
  const bid = tenant.businessId;
  const agentRes = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${bid}/agents`,
    headers: adminHeaders,
    payload: {
      name: c.name.slice(0, 100),
      ...c.agent,
      activation_rules: { debounce_seconds: 0.2, ...(c.agent.activation_rules as object | undefined) },
    },
  });
  if (agentRes.statusCode !== 201) throw new Error(`${c.name}: the agent was refused: ${agentRes.body}`);
  const channel = await createWhatsAppChannel(app, bid, { apiBaseUrl: graph.baseUrl, accessToken: graph.accessToken });
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${bid}/channels/${channel.id}`,
    headers: adminHeaders,
    payload: { agent_id: agentRes.json<{ agent: { id: string } }>().agent.id },
  });
  if (patched.statusCode !== 200) throw new Error(`${c.name}: the channel's agent was refused: ${patched.body}`);
  const customer = `3469${String(1_000_000 + (customers++ % 9_000_000)).padStart(7, '0')}`;
  if (c.contact) {
    const res = await app.inject({
      method: 'POST',
      url: `${PUBLIC}/contacts`,
      headers: tenant.headers,
      payload: { ...c.contact, phone_number: `+${customer}` },
    });
    if (res.statusCode !== 201) throw new Error(`${c.name}: the contact was refused: ${res.body}`);
  }
  const since = new Date(Date.now() - 1000).toISOString();
  const failures: string[] = [];

  // The agent's answers: follow-ups and sentiments are runs of other kinds.
  const runsOf = async () => {
    const { rows } = await sql<{ status: string; outcome: string | null }>`
      select status, outcome from ai_runs where business_id = ${bid} and kind = 'reply' order by id`.execute(db);
    return rows;
  };
  const askedFor = () => scripted?.requests.filter((r) => !isSentiment(r)).length ?? 0;
  const agentMessages = async () => {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from messages where business_id = ${bid} and sender_type = 'ai_agent'`.execute(db);
    return rows[0].n;
  };
  const sentTo = () =>
    graph
      .sends()
      .filter((r) => (r.body as { to?: string }).to === customer)
      .map((r) => (r.body as { text?: { body?: string } }).text?.body ?? '');

  for (const [i, turn] of c.turns.entries()) {
    const answers = (turn.script ?? []).map(toAnswer);
    const asked = askedFor();
    if (scripted)
      scripted.reply = (request) =>
        isSentiment(request)
          ? { text: 'NEUTRAL' }
          : (answers.shift() ?? { text: `(the script of turn ${i + 1} has no more answers)` });
    const before = (await runsOf()).length;
    for (const text of turn.customer) {
      const res = await postSigned(
        app,
        notificationFor(channel, {
          contacts: [{ waId: customer, name: 'Lucía Pérez' }],
          messages: [inboundMessage(customer, 'text', { body: text })],
        }),
        channel.appSecret,
      );
      if (res.statusCode !== 200) throw new Error(`${c.name}: the notification was refused (${res.statusCode})`);
    }
    if (turn.runs === false) {
      await sleep(1000);
      if ((await runsOf()).length !== before) failures.push(`turn ${i + 1}: the agent ran, and should not have`);
    } else {
      await until(
        async () => {
          const runs = await runsOf();
          return runs.length > before && runs.every((r) => r.status !== 'running');
        },
        service.turnTimeoutMs,
        `the run of turn ${i + 1}`,
      );
      // The replies the runs accepted, handed to the channel.
      await until(async () => sentTo().length >= (await agentMessages()), 10_000, `the replies of turn ${i + 1}`);
    }
    if (scripted && turn.script && askedFor() - asked !== turn.script.length)
      failures.push(
        `turn ${i + 1}: the model was asked ${askedFor() - asked} times; the script has ${turn.script.length} answers`,
      );
  }

  const replies = sentTo();
  const eventsRes = await app.inject({
    url: `${PUBLIC}/events?since=${encodeURIComponent(since)}&limit=500`,
    headers: tenant.headers,
  });
  if (eventsRes.statusCode !== 200) throw new Error(`${c.name}: events: ${eventsRes.body}`);
  const events = eventsRes.json<{ events: { type: string }[] }>().events.map((e) => e.type);
  const runs = await runsOf();
  const { expect } = c;
  if (expect.replies?.min !== undefined && replies.length < expect.replies.min)
    failures.push(`${replies.length} replies, expected at least ${expect.replies.min}`);
  if (expect.replies?.max !== undefined && replies.length > expect.replies.max)
    failures.push(`${replies.length} replies, expected at most ${expect.replies.max}`);
  for (const type of expect.events ?? []) if (!events.includes(type)) failures.push(`no ${type} event`);
  for (const type of expect.absent_events ?? []) if (events.includes(type)) failures.push(`a ${type} event`);
  if (expect.last_run !== undefined && runs.at(-1)?.status !== expect.last_run)
    failures.push(`the last run ended ${runs.at(-1)?.status ?? '(none)'}, expected ${expect.last_run}`);
  if (expect.manual_control !== undefined) {
    const { rows } = await sql<{ manual_control: boolean }>`
      select manual_control from conversations where business_id = ${bid}`.execute(db);
    if (rows[0]?.manual_control !== expect.manual_control)
      failures.push(`manual control is ${rows[0]?.manual_control}, expected ${expect.manual_control}`);
  }
  if (expect.contact) {
    const res = await app.inject({
      url: `${PUBLIC}/contacts?phone=${encodeURIComponent(`+${customer}`)}`,
      headers: tenant.headers,
    });
    const contact = res.json<{ results?: Record<string, unknown>[] }>().results?.[0] ?? {};
    for (const [field, value] of Object.entries(expect.contact))
      if (JSON.stringify(contact[field]) !== JSON.stringify(value))
        failures.push(`the contact's ${field} is ${JSON.stringify(contact[field])}, expected ${JSON.stringify(value)}`);
  }
  return { name: c.name, file: c.file, failures, replies, events, runs };
}
