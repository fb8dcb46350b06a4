import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TOOL_ROUNDS } from '../../../src/modules/ai/ai-run.job.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { createUser } from '../dashboard-auth/dashboard-helpers.ts';
import { aiFixture, endedRun, eventsOf, patchAgent, waitForReplies, waitUntil, type AiFixture } from './ai-helpers.ts';

// One business, channel and agent for the file; each test writes from a customer number of its own,
// so each has its own conversation and runs.
let f: AiFixture;
let seller: string;
let team: string;
let gone: string;

beforeAll(async () => {
  f = await aiFixture({ embeddings: true, agent: { prompt_config: { fallback_message: 'Te atiende una persona.' } } });
  seller = (await createUser(f.app.app, f.tenant.businessId, { email: 'ventas@acme.example', role: 'agent' })).id;
  gone = (await createUser(f.app.app, f.tenant.businessId, { email: 'ex@acme.example', role: 'agent' })).id;
  const res = await f.app.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${f.tenant.businessId}/teams`,
    headers: adminHeaders,
    payload: { name: 'Soporte' },
  });
  team = res.json().team.id;
  await patchAgent(f, {
    tools: {
      search_collection: { enabled: true, instructions: 'Úsala para preguntas de envíos.' },
      human_handoff: { enabled: true },
      transfer: {
        enabled: true,
        targets: [
          { name: 'ventas', description: 'compras', user_id: seller },
          { name: 'soporte', team_id: team },
          { name: 'gerencia', user_id: gone },
          { name: 'central', phone_number: '+34 911 222 333' },
        ],
      },
      resolve_conversation: { enabled: true },
      update_contact: { enabled: true, fields: ['name'], custom_fields: ['city'] },
      send_invoice: { enabled: true, instructions: 'not a tool the service has' },
    },
  });
}, 60_000);
afterAll(async () => {
  await f.close();
});

const conversationRow = (id: string) =>
  f.app.database.db
    .selectFrom('conversations')
    .select(['manual_control', 'assigned_user_id', 'team_id'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

/** A customer writes; the scripted model answers; the run ends. */
async function exchange(from: string, text: string) {
  const before = f.llm.requests.length;
  await f.inbound(text, from);
  const conversationId = await f.conversationOf(from);
  const run = await endedRun(f, conversationId);
  return { conversationId, run, requests: f.llm.requests.slice(before) };
}

describe("the agent's tools", () => {
  it('offers the enabled tools it has, named so, with their instructions and what their configuration allows', async () => {
    const { requests, run } = await exchange('34600000001', 'Hola');
    expect(run.status).toBe('replied');
    const tools = requests[0].body.tools!;
    expect(tools.map((t) => t.function.name)).toEqual([
      'search_collection',
      'human_handoff',
      'transfer',
      'resolve_conversation',
      'update_contact',
    ]);
    const byName = Object.fromEntries(tools.map((t) => [t.function.name, t.function]));
    expect(byName.search_collection.description).toContain('Úsala para preguntas de envíos.');
    expect(byName.transfer.parameters.properties.target.enum).toEqual(['ventas', 'soporte', 'gerencia', 'central']);
    expect(byName.transfer.description).toContain('ventas: compras');
    // update_contact may write the name and the custom field city only; no tool takes an id.
    const fields = byName.update_contact.parameters.properties.fields.properties;
    expect(Object.keys(fields)).toEqual(['name', 'custom_fields']);
    expect(Object.keys(fields.custom_fields.properties)).toEqual(['city']);
    for (const tool of tools) expect(JSON.stringify(tool.function.parameters)).not.toMatch(/_id"/);
  });

  it('search_collection: the nearest items of the business, with their fields, and the model answers from them', async () => {
    const created = await f.app.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${f.tenant.businessId}/collections`,
      headers: adminHeaders,
      payload: { name: 'FAQ', embedding_fields: ['question'] },
    });
    const collection = created.json().collection.id;
    const items = [
      ['envios', '¿Envían a Chile?', [1, 0, 0, 0]],
      ['devoluciones', '¿Cómo devuelvo un pedido?', [0, 1, 0, 0]],
      ['pagos', '¿Aceptan tarjeta?', [0.6, 0.8, 0, 0]],
    ] as const;
    for (const [id, question, vector] of items) {
      f.llm.vectors.set(`question: ${question}`, [...vector]);
      const res = await f.app.app.inject({
        method: 'POST',
        url: '/external/v2/search/item',
        headers: f.tenant.headers,
        payload: { collection_id: collection, external_id: id, item: { question, answer: `respuesta ${id}` } },
      });
      expect(res.statusCode).toBe(200);
    }
    await waitUntil(async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from search_items
        where business_id = ${f.tenant.businessId} and embedding is not null`.execute(f.app.database.db);
      return rows[0].n === 3;
    });
    f.llm.vectors.set('envíos internacionales', [0.9, 0.1, 0, 0]);
    f.llm.script(
      { toolCalls: [{ name: 'search_collection', arguments: { query: 'envíos internacionales', collection: 'FAQ' } }] },
      { text: 'Sí, enviamos a Chile.' },
    );
    const { run, requests } = await exchange('34600000002', '¿Envían a Chile?');
    expect(run).toMatchObject({ status: 'replied', reply_text: 'Sí, enviamos a Chile.' });
    expect(run.model_calls).toHaveLength(2);
    const [call] = run.tool_calls;
    expect(call).toMatchObject({
      round: 1,
      name: 'search_collection',
      arguments: { query: 'envíos internacionales', collection: 'FAQ' },
      latency_ms: expect.any(Number),
    });
    const results = (call.result as { results: { external_id: string; fields: unknown; score: number }[] }).results;
    expect(results.map((r) => r.external_id)).toEqual(['envios', 'pagos', 'devoluciones']);
    expect(results[0].fields).toEqual({ question: '¿Envían a Chile?', answer: 'respuesta envios' });
    // The model read the results in the tool's answer to its call.
    const answered = requests[1].body.messages!.find((m) => m.role === 'tool')!;
    expect(answered.tool_call_id).toBe(call.id);
    expect(JSON.parse(answered.content!)).toEqual({ result: call.result });
    expect(await waitForReplies(f, 1, '34600000002')).toEqual(['Sí, enviamos a Chile.']);
  });

  it("update_contact: the allowed fields of the run's contact, through the contacts' update (source ai); others refused", async () => {
    f.llm.script(
      { toolCalls: [{ name: 'update_contact', arguments: { fields: { tags: ['vip'] } } }] },
      {
        toolCalls: [
          { name: 'update_contact', arguments: { fields: { name: 'Ana Gómez', custom_fields: { city: 'Lima' } } } },
        ],
      },
      { text: 'Anotado, Ana.' },
    );
    const { run, conversationId } = await exchange('34600000003', 'Soy Ana Gómez, de Lima');
    expect(run.status).toBe('replied');
    expect(run.tool_calls.map((c: { error?: string }) => c.error ?? null)).toEqual(['fields not allowed: tags', null]);
    const contact = await f.app.database.db
      .selectFrom('contacts')
      .select(['first_name', 'last_name', 'tags', 'custom_fields'])
      .where('phone_number', '=', '34600000003')
      .executeTakeFirstOrThrow();
    expect(contact).toEqual({ first_name: 'Ana', last_name: 'Gómez', tags: [], custom_fields: { city: 'Lima' } });
    const { rows } = await sql<{ actor_type: string; agent_id: string; data: { source: string; changes: unknown[] } }>`
      select actor_type, agent_id, data from events where business_id = ${f.tenant.businessId}
        and type = 'contact_field_changed' and contact_id = (select contact_id from conversations where id = ${conversationId})`.execute(
      f.app.database.db,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor_type: 'ai_agent', agent_id: f.agentId, data: { source: 'ai' } });
    expect(rows[0].data.changes).toHaveLength(3);
  });

  it('human_handoff: manual control with the reason and an alert, by the agent, and the message the model wrote, with bot_end', async () => {
    f.llm.script({
      toolCalls: [
        {
          name: 'human_handoff',
          arguments: { reason: 'pide hablar con una persona', message: 'Enseguida te atiende una persona.' },
        },
      ],
    });
    const { run, conversationId, requests } = await exchange('34600000004', 'Quiero hablar con alguien');
    expect(requests).toHaveLength(1);
    expect(run).toMatchObject({
      status: 'handed_over',
      reply_text: 'Enseguida te atiende una persona.',
      bot_status: 'bot_end',
    });
    expect(run.tool_calls[0]).toMatchObject({ name: 'human_handoff', result: { handed_over: true } });
    expect(await waitForReplies(f, 1, '34600000004')).toEqual(['Enseguida te atiende una persona.']);
    expect((await conversationRow(conversationId)).manual_control).toBe(true);
    const events = await eventsOf(f, conversationId);
    expect(events.filter((e) => e.type !== 'agent_assigned')).toEqual([
      {
        type: 'manual_control_activated',
        actor_type: 'ai_agent',
        agent_id: f.agentId,
        data: { reason: 'pide hablar con una persona' },
      },
      {
        type: 'alert_triggered',
        actor_type: 'ai_agent',
        agent_id: f.agentId,
        data: { reason: 'pide hablar con una persona' },
      },
    ]);
  });

  it('resolve_conversation: conversation_resolved by the agent, and the run ends resolved', async () => {
    f.llm.scriptFor('Gracias, era todo', {
      toolCalls: [{ name: 'resolve_conversation', arguments: { reason: 'pregunta contestada' } }],
    });
    const { run, conversationId } = await exchange('34600000005', 'Gracias, era todo');
    expect(run).toMatchObject({ status: 'resolved', outcome: 'resolved', reply_message_id: null });
    const events = await eventsOf(f, conversationId);
    expect(events.find((e) => e.type === 'conversation_resolved')).toEqual({
      type: 'conversation_resolved',
      actor_type: 'ai_agent',
      agent_id: f.agentId,
      data: { reason: 'pregunta contestada' },
    });
  });
});

describe('a tool the conversation no longer wants', () => {
  it('a person took over while the model answered: the tool it asks for does nothing, and the run ends skipped', async () => {
    let release: (value?: unknown) => void = () => undefined;
    const held = new Promise((resolve) => (release = resolve));
    f.llm.scriptFor('Hola, una consulta', {
      hold: held,
      then: { toolCalls: [{ name: 'resolve_conversation', arguments: { reason: 'listo' } }] },
    });
    const asked = f.llm.requests.length;
    await f.inbound('Hola, una consulta', '34600000011');
    await f.llm.waitForRequests(asked + 1);
    const conversationId = await f.conversationOf('34600000011');
    const take = await f.app.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversationId}/manual-control`,
      headers: adminHeaders,
      payload: { active: true },
    });
    expect(take.statusCode).toBe(200);
    release();
    const run = await endedRun(f, conversationId);
    expect(run).toMatchObject({ status: 'skipped', outcome: 'manual_control', tool_calls: [] });
    expect((await eventsOf(f, conversationId)).map((e) => e.type)).toEqual([
      'agent_assigned',
      'manual_control_activated',
    ]);
  });
});

describe('transfer', () => {
  const transfers = async (conversationId: string) =>
    (await eventsOf(f, conversationId)).filter((e) => e.type.startsWith('transfer_'));

  it('to a listed user: assigned through the assignment rule, under manual control, transfer_accepted; the run ends transferred', async () => {
    f.llm.scriptFor('Quiero comprar 100 unidades', {
      toolCalls: [
        { name: 'transfer', arguments: { target: 'ventas', reason: 'quiere comprar', message: 'Te paso con ventas.' } },
      ],
    });
    const { run, conversationId } = await exchange('34600000006', 'Quiero comprar 100 unidades');
    expect(run).toMatchObject({ status: 'transferred', reply_text: 'Te paso con ventas.', bot_status: 'bot_end' });
    expect(await conversationRow(conversationId)).toEqual({
      manual_control: true,
      assigned_user_id: seller,
      team_id: null,
    });
    expect(await transfers(conversationId)).toEqual([
      {
        type: 'transfer_accepted',
        actor_type: 'ai_agent',
        agent_id: f.agentId,
        data: { reason: 'quiere comprar', target_user: seller, attempt_number: 1 },
      },
    ]);
    expect(await waitForReplies(f, 1, '34600000006')).toEqual(['Te paso con ventas.']);
  });

  it('to a listed team: the team is assigned', async () => {
    f.llm.scriptFor('No me funciona', {
      toolCalls: [{ name: 'transfer', arguments: { target: 'soporte', reason: 'falla técnica' } }],
    });
    const { run, conversationId } = await exchange('34600000007', 'No me funciona');
    expect(run.status).toBe('transferred');
    expect(await conversationRow(conversationId)).toEqual({
      manual_control: true,
      assigned_user_id: null,
      team_id: team,
    });
  });

  it('a removed user and a target not listed are rejected, and the model chooses again', async () => {
    await f.app.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${f.tenant.businessId}/users/${gone}`,
      headers: adminHeaders,
    });
    f.llm.scriptFor(
      'Quiero poner una queja',
      { toolCalls: [{ name: 'transfer', arguments: { target: 'gerencia', reason: 'queja' } }] },
      { toolCalls: [{ name: 'transfer', arguments: { target: 'director', reason: 'queja' } }] },
      { toolCalls: [{ name: 'transfer', arguments: { target: 'central', reason: 'queja' } }] },
    );
    const { run, conversationId, requests } = await exchange('34600000008', 'Quiero poner una queja');
    expect(requests).toHaveLength(3);
    expect(run.status).toBe('transferred');
    expect(run.tool_calls.map((c: { error?: string }) => c.error ?? 'ok')).toEqual([
      'the target gerencia is not available; available: ventas, soporte, central',
      'no target named director; available: ventas, soporte, central',
      'ok',
    ]);
    expect((await transfers(conversationId)).map((e) => [e.type, e.data])).toEqual([
      ['transfer_rejected', { reason: 'the target gerencia is not available', target_user: gone, attempt_number: 1 }],
      ['transfer_rejected', { reason: 'no target named director', target_user: 'director', attempt_number: 2 }],
      ['transfer_accepted', { reason: 'queja', target_user: '+34 911 222 333', attempt_number: 3 }],
    ]);
    // A number is no one to assign: manual control only.
    expect(await conversationRow(conversationId)).toEqual({
      manual_control: true,
      assigned_user_id: null,
      team_id: null,
    });
  });

  it('no target available (a user of another business, a removed one): transfer_fallback_required and the hand-over', async () => {
    const other = await (await import('../../helpers/tenants.ts')).createTenant(f.app.app, 'Other');
    const foreign = (await createUser(f.app.app, other.businessId, { email: 'x@other.example' })).id;
    // As if written before: a target the configuration checks would refuse today (another business's user).
    await sql`update agents set tools = jsonb_set(tools, '{transfer,targets}',
        ${JSON.stringify([
          { name: 'externo', user_id: foreign },
          { name: 'gerencia', user_id: gone },
        ])}::jsonb)
      where business_id = ${f.tenant.businessId} and id = ${f.agentId}`.execute(f.app.database.db);
    f.llm.scriptFor('Es urgente', {
      toolCalls: [{ name: 'transfer', arguments: { target: 'externo', reason: 'urgente' } }],
    });
    const { run, conversationId } = await exchange('34600000009', 'Es urgente');
    expect(run).toMatchObject({ status: 'handed_over', reply_text: 'Te atiende una persona.', bot_status: 'bot_end' });
    expect((await eventsOf(f, conversationId)).map((e) => [e.type, e.data])).toEqual([
      ['agent_assigned', expect.any(Object)],
      ['transfer_fallback_required', { reason: 'urgente', target_user: foreign, attempt_number: 1 }],
      ['manual_control_activated', { reason: 'urgente' }],
      [
        'alert_triggered',
        { reason: 'transfer: the target externo is not available, and no other target is available' },
      ],
    ]);
    expect((await conversationRow(conversationId)).assigned_user_id).toBeNull();
  });

  it('targets are checked when configured: one kind each, unique names, of the business (400)', async () => {
    const patch = (targets: unknown[]) =>
      f.app.app.inject({
        method: 'PATCH',
        url: `/external/v2/agents/${f.agentId}`,
        headers: f.tenant.headers,
        payload: { agent: { tools: { transfer: { targets } } } },
      });
    for (const targets of [
      [{ name: 'a', user_id: seller, team_id: team }],
      [{ name: 'a' }],
      [
        { name: 'a', user_id: seller },
        { name: 'a', team_id: team },
      ],
      [{ name: 'a', user_id: gone }],
      [{ name: 'a', phone_number: 'not a number' }],
      [{ name: 'a', user_id: seller, conversation_id: seller }],
    ]) {
      const res = await patch(targets);
      expect(res.statusCode, JSON.stringify(targets)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const ok = await patch([{ name: 'ventas', user_id: seller }]);
    expect(ok.statusCode).toBe(200);
    expect(ok.json().agent.tools.transfer.targets).toEqual([{ name: 'ventas', user_id: seller }]);
  });
});

describe('invalid tool calls', () => {
  it('are answered as errors and recorded; past the bound of rounds the conversation goes to a person', async () => {
    await patchAgent(f, { tools: { resolve_conversation: { enabled: false } } });
    f.llm.scriptFor(
      'Hola, tengo dudas',
      { toolCalls: [{ name: 'send_invoice', arguments: {} }] },
      { toolCalls: [{ name: 'resolve_conversation', arguments: { reason: 'listo' } }] },
      { toolCalls: [{ name: 'human_handoff', arguments: { motivo: 'x' } }] },
      { toolCalls: [{ name: 'update_contact', arguments: '{"fields": ' }] },
      { toolCalls: [{ name: 'search_collection', arguments: { query: 'x' } }] },
    );
    const { run, conversationId, requests } = await exchange('34600000010', 'Hola, tengo dudas');
    expect(requests).toHaveLength(MAX_TOOL_ROUNDS + 1);
    expect(run.tool_calls.map((c: { name: string; error?: string }) => [c.name, c.error])).toEqual([
      ['send_invoice', 'no tool named send_invoice'],
      ['resolve_conversation', 'the tool resolve_conversation is not enabled'],
      ['human_handoff', '/: unknown argument motivo'],
      ['update_contact', 'the arguments are not JSON'],
    ]);
    expect(run).toMatchObject({
      status: 'handed_over',
      error: `the model asked for tools more than ${MAX_TOOL_ROUNDS} times`,
      reply_text: 'Te atiende una persona.',
    });
    // Each error reached the model as the answer to its call.
    const last = requests[MAX_TOOL_ROUNDS].body.messages!.filter((m) => m.role === 'tool');
    expect(last.map((m) => JSON.parse(m.content!))).toEqual(
      run.tool_calls.map((c: { error: string }) => ({ error: c.error })),
    );
    // Nothing but the hand-over happened.
    expect((await eventsOf(f, conversationId)).map((e) => e.type)).toEqual([
      'agent_assigned',
      'manual_control_activated',
      'alert_triggered',
    ]);
  });
});
