import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant } from '../../helpers/tenants.ts';
import { lastUserText } from '../../helpers/fake-llm-api.ts';
import { createUser, call, signIn } from '../dashboard-auth/dashboard-helpers.ts';
import {
  aiApp,
  aiBusiness,
  aiFixture,
  eventsOf,
  runsOf,
  settle,
  waitForReplies,
  waitUntil,
  type AiApp,
  type AiFixture,
} from './ai-helpers.ts';

// One app for the file; each test makes a business (channel, agent) of its own and writes texts of its own.
let base: AiApp;
beforeAll(async () => {
  base = await aiApp();
}, 60_000);
afterAll(() => base.close());

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

/** The business's AI run jobs. */
const runJobs = (fixture: AiFixture) =>
  fixture.app.database.db
    .selectFrom('outbox')
    .select('state')
    .where('business_id', '=', fixture.tenant.businessId)
    .where('kind', '=', 'ai_run')
    .execute();

/** The domain events of a message (what subscribers such as the live stream hear). */
async function domainEventsOf(fixture: AiFixture, messageId: string) {
  const { rows } = await sql<{ type: string; data: Record<string, unknown> }>`
    select type, data from domain_events where business_id = ${fixture.tenant.businessId} and subject_id = ${messageId}
    order by id`.execute(fixture.app.database.db);
  return rows;
}

describe("the agent's reply", () => {
  it('answers an inbound message through the channel as the agent: ai_agent message, message_created, bot_start, a recorded run', async () => {
    f = await aiBusiness(base, {
      agent: { prompt_config: { tone: 'friendly' }, activation_rules: { debounce_seconds: 0.2 } },
    });
    expect(await f.inbound('Hola, ¿dónde está mi pedido?')).toBe(200);
    const [reply] = await waitForReplies(f, 1);
    expect(reply).toBe('Reply to: Hola, ¿dónde está mi pedido?');

    // The model got the agent's instructions, its settings, the customer's known fields and the message.
    const [request] = f.llm.requests;
    expect(request.body.model).toBe('gpt-4o-mini');
    expect(request.headers.authorization).toBe('Bearer sk-test-key');
    const system = request.body.messages![0];
    expect(system.role).toBe('system');
    expect(system.content).toContain('You answer questions about orders.');
    expect(system.content).toContain('- tone: "friendly"');
    expect(system.content).toContain('Lucía');
    expect(lastUserText(request)).toBe('Hola, ¿dónde está mi pedido?');

    const conversationId = await f.conversationOf();
    const [run] = await runsOf(f, conversationId);
    expect(run).toMatchObject({
      conversation_id: conversationId,
      agent_id: f.agentId,
      status: 'replied',
      outcome: 'replied',
      reply_text: reply,
      bot_status: 'bot_start',
      attempts: 1,
      error: null,
      tool_calls: [],
    });
    expect(run.input_message_ids).toEqual([run.trigger_message_id]);
    expect(run.model_calls).toEqual([
      { model: 'gpt-4o-mini', tokens_in: expect.any(Number), tokens_out: 7, latency_ms: expect.any(Number) },
    ]);

    const message = await f.app.database.db
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', run.reply_message_id)
      .executeTakeFirstOrThrow();
    expect(message).toMatchObject({
      conversation_id: conversationId,
      direction: 'outbound',
      sender_type: 'ai_agent',
      agent_id: f.agentId,
      user_id: null,
      text: reply,
    });
    await waitUntil(async () => {
      const row = await f!.app.database.db
        .selectFrom('messages')
        .select('status')
        .where('id', '=', run.reply_message_id)
        .executeTakeFirstOrThrow();
      return row.status === 'SENT';
    });
    expect((await domainEventsOf(f, run.reply_message_id)).map((e) => [e.type, e.data.sender_type])).toContainEqual([
      'message_created',
      'ai_agent',
    ]);
    // The export names the agent as the sender.
    const exported = await f.app.app.inject({
      url: `/external/v2/messages?since=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`,
      headers: f.tenant.headers,
    });
    const row = exported.json().messages.find((m: { id: string }) => m.id === run.reply_message_id);
    expect(row).toMatchObject({ sender_type: 'ai_agent', agent: { id: f.agentId, name: 'Sofia' } });

    // A second exchange: the history carries the first, and bot_start marks only the first reply.
    await f.inbound('Gracias, ¿y cuándo llega?');
    await waitForReplies(f, 2);
    const second = f.llm.requests[1].body.messages!.slice(1);
    expect(second.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Hola, ¿dónde está mi pedido?'],
      ['assistant', reply],
      ['user', 'Gracias, ¿y cuándo llega?'],
    ]);
    const runs = await runsOf(f, conversationId);
    expect(runs.map((r) => [r.status, r.bot_status])).toEqual([
      ['replied', null],
      ['replied', 'bot_start'],
    ]);
  });

  it("uses the agent's own model, and the history within its token bound, oldest dropped first", async () => {
    f = await aiBusiness(base, {
      agent: {
        model: 'small-1',
        prompt_config: { max_history_tokens: 100 },
        activation_rules: { debounce_seconds: 0.2 },
      },
    });
    const long = 'palabra '.repeat(60).trim();
    await f.inbound(`primero ${long}`);
    await waitForReplies(f, 1);
    await f.inbound(`segundo ${long}`);
    await waitForReplies(f, 2);
    const request = f.llm.requests[1];
    expect(request.body.model).toBe('small-1');
    // The first exchange does not fit 100 tokens beside the newest message, which is always kept.
    expect(request.body.messages!.slice(1).map((m) => m.content)).toEqual([`segundo ${long}`]);
  });

  it('answers messages that arrive within the debounce together: one run, one model call, one reply', async () => {
    f = await aiBusiness(base, { agent: { activation_rules: { debounce_seconds: 1 } } });
    await f.inbound('Hola');
    await f.inbound('Quería saber el horario');
    await f.inbound('¿Abren el sábado?');
    await waitForReplies(f, 1);
    await settle(1500);
    expect(f.repliesTo()).toEqual(['Reply to: ¿Abren el sábado?']);
    expect(f.llm.requests).toHaveLength(1);
    expect(f.llm.requests[0].body.messages!.slice(1).map((m) => m.content)).toEqual([
      'Hola',
      'Quería saber el horario',
      '¿Abren el sábado?',
    ]);
    const runs = await runsOf(f, await f.conversationOf());
    expect(runs).toHaveLength(1);
    expect(runs[0].input_message_ids).toHaveLength(3);
    // One waiting job per conversation: the later messages pushed it rather than adding others.
    expect(await runJobs(f)).toEqual([{ state: 'done' }]);
  });
});

describe('runs that send nothing', () => {
  it('sends nothing once a person took over while the run waited, and starts none under manual control', async () => {
    f = await aiBusiness(base, { agent: { activation_rules: { debounce_seconds: 1 } } });
    await f.inbound('Hola, ¿quién atiende?');
    const conversationId = await f.conversationOf();
    const take = await f.app.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversationId}/manual-control`,
      headers: adminHeaders,
      payload: { active: true },
    });
    expect(take.statusCode).toBe(200);
    await waitUntil(async () => ['skipped', 'replied'].includes((await runsOf(f!, conversationId))[0]?.status));
    const [run] = await runsOf(f, conversationId);
    expect(run).toMatchObject({ status: 'skipped', outcome: 'manual_control', reply_message_id: null });
    expect(f.llm.requests).toHaveLength(0);

    // Under manual control, an inbound message schedules no run at all.
    await f.inbound('¿Hay alguien?');
    await settle(1500);
    expect(f.llm.requests).toHaveLength(0);
    expect(f.repliesTo()).toEqual([]);
    expect(await runJobs(f)).toEqual([{ state: 'done' }]);
  });

  it('a run superseded by a newer message while the model answered sends nothing; the newer run answers both', async () => {
    f = await aiBusiness(base, { agent: { activation_rules: { debounce_seconds: 0.2 } } });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    f.llm.scriptFor('Primero', { hold: held, then: { text: 'Respuesta a lo primero' } });
    await f.inbound('Primero');
    await f.llm.waitForRequests(1);
    await f.inbound('Segundo');
    release();
    await waitForReplies(f, 1);
    await settle(800);
    expect(f.repliesTo()).toEqual(['Reply to: Segundo']);
    const runs = await runsOf(f, await f.conversationOf());
    expect(runs.map((r) => [r.status, r.outcome])).toEqual([
      ['replied', 'replied'],
      ['superseded', 'superseded'],
    ]);
    expect(runs[0].input_message_ids).toHaveLength(2);
    expect(f.llm.requests).toHaveLength(2);
  });

  it('without LLM_URL no run starts, and the agent says why through the operator API and the dashboard', async () => {
    f = await aiFixture({ llm: false });
    await f.inbound('Hola');
    await settle(800);
    expect(f.repliesTo()).toEqual([]);
    expect(await runsOf(f, await f.conversationOf())).toEqual([]);
    const jobs = await f.app.database.db.selectFrom('outbox').select('id').where('kind', '=', 'ai_run').execute();
    expect(jobs).toEqual([]);
    const reason = 'no language model is configured (LLM_URL is unset): agents do not answer';
    const read = await f.app.app.inject({ url: `/external/v2/agents/${f.agentId}`, headers: f.tenant.headers });
    expect(read.json().agent).toMatchObject({ status: 'inactive', inactive_reason: reason });
    const list = await f.app.app.inject({
      url: `/admin/v1/businesses/${f.tenant.businessId}/agents`,
      headers: adminHeaders,
    });
    expect(list.json().agents[0]).toMatchObject({ status: 'inactive', inactive_reason: reason });
    await createUser(f.app.app, f.tenant.businessId, {
      email: 'owner@acme.test',
      password: 'a-long-password-1',
      role: 'owner',
    });
    const browser = await signIn(f.app.app, 'owner@acme.test', 'a-long-password-1');
    const shown = await call(f.app.app, browser, 'GET', `/agents/${f.agentId}`);
    expect(shown.json().agent).toMatchObject({ status: 'inactive', inactive_reason: reason });
  });
});

describe('a model that fails', () => {
  it('hands the conversation to a person after the retries: the fallback message with bot_end, manual control and an alert by the agent', async () => {
    f = await aiBusiness(base, {
      agent: {
        prompt_config: { fallback_message: 'Te paso con una persona del equipo.' },
        activation_rules: { debounce_seconds: 0.2 },
      },
    });
    f.llm.scriptFor('Hola, necesito ayuda', { status: 500 }, { status: 502 }, { status: 503 });
    await f.inbound('Hola, necesito ayuda');
    await waitForReplies(f, 1);
    expect(f.repliesTo()).toEqual(['Te paso con una persona del equipo.']);
    expect(f.llm.requests).toHaveLength(3); // the first try and LLM_MAX_RETRIES (2)
    const conversationId = await f.conversationOf();
    await waitUntil(async () => (await runsOf(f!, conversationId))[0]?.status === 'handed_over');
    const [run] = await runsOf(f, conversationId);
    expect(run).toMatchObject({
      status: 'handed_over',
      bot_status: 'bot_end',
      reply_text: 'Te paso con una persona del equipo.',
    });
    expect(run.error).toMatch(/^the model failed: /);
    expect(run.model_calls).toEqual([
      expect.objectContaining({ model: 'gpt-4o-mini', tokens_in: null, tokens_out: null, error: expect.any(String) }),
    ]);
    expect(JSON.stringify(run)).not.toContain('sk-test-key');
    const events = await eventsOf(f, conversationId);
    expect(events.map((e) => [e.type, e.actor_type, e.agent_id])).toEqual([
      ['agent_assigned', 'system', f.agentId],
      ['manual_control_activated', 'ai_agent', f.agentId],
      ['alert_triggered', 'ai_agent', f.agentId],
    ]);
    const conversation = await f.app.database.db
      .selectFrom('conversations')
      .select('manual_control')
      .where('id', '=', conversationId)
      .executeTakeFirstOrThrow();
    expect(conversation.manual_control).toBe(true);

    // A person has the conversation now: the next message starts no run.
    await f.inbound('¿Hola?');
    await settle(800);
    expect(f.llm.requests).toHaveLength(3);
  });

  it('without a fallback message the customer is told nothing, and the hand-over still happens', async () => {
    f = await aiBusiness(base);
    // The first try and LLM_MAX_RETRIES (2) each lose their connection.
    f.llm.scriptFor('Hola, ¿me oyen?', { destroy: true }, { destroy: true }, { destroy: true });
    await f.inbound('Hola, ¿me oyen?');
    const conversationId = await f.conversationOf();
    await waitUntil(async () => (await runsOf(f!, conversationId))[0]?.status === 'handed_over');
    expect(f.repliesTo()).toEqual([]);
    expect((await eventsOf(f, conversationId)).map((e) => e.type)).toEqual([
      'agent_assigned',
      'manual_control_activated',
      'alert_triggered',
    ]);
  });
});

describe("a conversation's runs through the APIs", () => {
  it('are paged newest first; another business or a bad id is refused', async () => {
    f = await aiBusiness(base);
    for (const text of ['uno', 'dos', 'tres']) {
      await f.inbound(text);
      await waitForReplies(f, ['uno', 'dos', 'tres'].indexOf(text) + 1);
    }
    const conversationId = await f.conversationOf();
    const first = await f.app.app.inject({
      url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversationId}/ai-runs?limit=2`,
      headers: adminHeaders,
    });
    expect(first.statusCode).toBe(200);
    expect(first.json().runs.map((r: { reply_text: string }) => r.reply_text)).toEqual([
      'Reply to: tres',
      'Reply to: dos',
    ]);
    const next = await runsOf(f, conversationId, `?limit=2&before=${first.json().next_before}`);
    expect(next.map((r) => r.reply_text)).toEqual(['Reply to: uno']);

    const other = await createTenant(f.app.app, 'Other');
    const foreign = await f.app.app.inject({
      url: `/admin/v1/businesses/${other.businessId}/conversations/${conversationId}/ai-runs`,
      headers: adminHeaders,
    });
    expect(foreign.statusCode).toBe(404);
    for (const query of ['?limit=0', '?limit=101', '?before=nope', '?page=2']) {
      const bad = await f.app.app.inject({
        url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversationId}/ai-runs${query}`,
        headers: adminHeaders,
      });
      expect(bad.statusCode, query).toBe(400);
      expect(bad.json().error.code).toBe('validation_error');
    }

    await createUser(f.app.app, f.tenant.businessId, {
      email: 'agent@acme.test',
      password: 'a-long-password-1',
      role: 'agent',
    });
    await createUser(f.app.app, other.businessId, {
      email: 'other@other.test',
      password: 'a-long-password-1',
      role: 'owner',
    });
    const mine = await signIn(f.app.app, 'agent@acme.test', 'a-long-password-1');
    const theirs = await signIn(f.app.app, 'other@other.test', 'a-long-password-1');
    const shown = await call(f.app.app, mine, 'GET', `/conversations/${conversationId}/ai-runs?limit=1`);
    expect(shown.statusCode).toBe(200);
    expect(shown.json().runs).toHaveLength(1);
    expect((await call(f.app.app, theirs, 'GET', `/conversations/${conversationId}/ai-runs`)).statusCode).toBe(404);
  });
});
