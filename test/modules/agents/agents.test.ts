import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const UNKNOWN = '01900000-0000-7000-8000-000000000000';

async function createAgent(body: Record<string, unknown> = {}, businessId = tenant.businessId) {
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/agents`,
    headers: adminHeaders,
    payload: {
      name: 'Sofia',
      system_prompt: 'You answer questions about orders.',
      model: 'small-1',
      prompt_config: { tone: 'friendly', language: 'es', style: { emojis: true, length: 'short' } },
      tools: { human_handoff: { enabled: true, instructions: 'Hand over when the customer asks for a person.' } },
      activation_rules: {
        contact_tags: { any: ['vip'] },
        opening_hours: { time_zone: 'Europe/Madrid', windows: [{ days: ['mon', 'tue'], from: '09:00', to: '18:00' }] },
      },
      ...body,
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().agent as Record<string, any>;
}

const read = (agentId: string, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'GET', url: `/external/v2/agents/${agentId}`, headers });

const update = (
  agentId: string,
  payload: unknown,
  method: 'PATCH' | 'PUT' = 'PATCH',
  headers: Record<string, string> = tenant.headers,
) => t.app.inject({ method, url: `/external/v2/agents/${agentId}`, headers, payload: payload as object });

const stored = async (agentId: string) => (await read(agentId)).json().agent;

describe('GET /external/v2/agents/:agent_id', () => {
  it('answers the whole configuration with the business id', async () => {
    const agent = await createAgent();
    const res = await read(agent.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      agent: {
        id: agent.id,
        name: 'Sofia',
        type: 'basic',
        system_prompt: 'You answer questions about orders.',
        model: 'small-1',
        prompt_config: { tone: 'friendly', language: 'es', style: { emojis: true, length: 'short' } },
        tools: { human_handoff: { enabled: true, instructions: 'Hand over when the customer asks for a person.' } },
        data: {},
        activation_rules: {
          contact_tags: { any: ['vip'] },
          opening_hours: {
            time_zone: 'Europe/Madrid',
            windows: [{ days: ['mon', 'tue'], from: '09:00', to: '18:00' }],
          },
        },
        follow_up_settings: {},
        inactivity_run_settings: {},
        status: 'inactive',
        inactive_reason: 'no language model is configured (LLM_URL is unset): agents do not answer',
        created_at: agent.created_at,
        updated_at: agent.created_at,
      },
      business_id: tenant.businessId,
    });
  });

  it("answers 404 for an unknown agent and for another business's, 400 for a bad id, 401 without a key", async () => {
    const agent = await createAgent();
    expect((await read(UNKNOWN)).statusCode).toBe(404);
    const foreign = await read(agent.id, other.headers);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('not_found');
    expect((await read('not-a-uuid')).json().error.code).toBe('validation_error');
    expect((await read(agent.id, {})).statusCode).toBe(401);
  });
});

describe('PATCH /external/v2/agents/:agent_id', () => {
  it('merges the JSON fields at every depth and replaces the plain settings', async () => {
    const agent = await createAgent();
    const res = await update(agent.id, {
      agent: {
        system_prompt: 'You answer questions about orders and returns.',
        prompt_config: { language: 'pt', style: { length: 'long' } },
        activation_rules: { contact_tags: { any: ['gold', 'vip'] } },
        data: { catalogue: 'spring' },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const after = await stored(agent.id);
    expect(after.system_prompt).toBe('You answer questions about orders and returns.');
    expect(after.prompt_config).toEqual({ tone: 'friendly', language: 'pt', style: { emojis: true, length: 'long' } });
    // An array replaces; the object beside it stays.
    expect(after.activation_rules).toEqual({
      contact_tags: { any: ['gold', 'vip'] },
      opening_hours: { time_zone: 'Europe/Madrid', windows: [{ days: ['mon', 'tue'], from: '09:00', to: '18:00' }] },
    });
    expect(after.data).toEqual({ catalogue: 'spring' });
    expect(after.tools).toEqual(agent.tools);
    expect(after.model).toBe('small-1');
    expect(after.updated_at > agent.updated_at).toBe(true);
  });

  it('answers id, name, type and each field sent, as it now is', async () => {
    const agent = await createAgent();
    const res = await update(agent.id, { agent: { prompt_config: { tone: 'formal' }, model: 'large-2' } });
    expect(res.json()).toEqual({
      agent: {
        id: agent.id,
        name: 'Sofia',
        type: 'basic',
        model: 'large-2',
        prompt_config: { tone: 'formal', language: 'es', style: { emojis: true, length: 'short' } },
      },
      business_id: tenant.businessId,
    });
    const renamed = await update(agent.id, { agent: { name: 'Sofía', type: 'support' } });
    expect(renamed.json().agent).toEqual({ id: agent.id, name: 'Sofía', type: 'support' });
  });

  it('merges each tool by name: a tool keeps what the update leaves out; a new tool needs enabled', async () => {
    const agent = await createAgent();
    const off = await update(agent.id, { agent: { tools: { human_handoff: { enabled: false } } } });
    expect(off.json().agent.tools).toEqual({
      human_handoff: { enabled: false, instructions: 'Hand over when the customer asks for a person.' },
    });

    const added = await update(agent.id, { agent: { tools: { order_status: { enabled: true } } } });
    expect(added.statusCode).toBe(200);
    expect((await stored(agent.id)).tools).toEqual({
      human_handoff: { enabled: false, instructions: 'Hand over when the customer asks for a person.' },
      order_status: { enabled: true, instructions: '' },
    });

    const incomplete = await update(agent.id, {
      agent: { tools: { refunds: { instructions: 'Only under 50 EUR.' } } },
    });
    expect(incomplete.statusCode).toBe(400);
    expect(incomplete.json().error.details).toEqual([
      { location: 'body', path: '/agent/tools/refunds/enabled', message: 'required for a new tool' },
    ]);
    expect(Object.keys((await stored(agent.id)).tools).sort()).toEqual(['human_handoff', 'order_status']);
  });

  it('drops null values before validation, at every depth: a null erases nothing', async () => {
    const agent = await createAgent();
    const res = await update(agent.id, {
      agent: {
        name: null,
        model: null,
        id: null,
        prompt_config: { tone: null, language: 'en', style: { emojis: null } },
        tools: null,
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().agent).toEqual({
      id: agent.id,
      name: 'Sofia',
      type: 'basic',
      prompt_config: { tone: 'friendly', language: 'en', style: { emojis: true, length: 'short' } },
    });
    const after = await stored(agent.id);
    expect(after.model).toBe('small-1');
    expect(after.tools).toEqual(agent.tools);
  });

  it('a patch of nulls only sends nothing: no value becomes an empty object, nothing is written', async () => {
    const agent = await createAgent({ data: { x: 'keep', list: [1, 2] } });
    const res = await update(agent.id, {
      agent: { data: { x: { y: null }, list: { z: null } }, prompt_config: { style: { emojis: null } } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().agent).toEqual({ id: agent.id, name: 'Sofia', type: 'basic' });
    const after = await stored(agent.id);
    expect(after.data).toEqual({ x: 'keep', list: [1, 2] });
    expect(after.updated_at).toBe(agent.updated_at);
    // An object sent empty is a value: it replaces.
    expect((await update(agent.id, { agent: { data: { x: {} } } })).json().agent.data).toEqual({ x: {}, list: [1, 2] });
  });

  it('merges keys named like Object.prototype members as any other key', async () => {
    const agent = await createAgent({ data: { meta: { constructor: 'Acme', toString: 'x' } } });
    const res = await update(agent.id, {
      agent: { data: { other: 1, valueOf: 2 }, tools: { constructor: { enabled: true } } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const after = await stored(agent.id);
    expect(after.data).toEqual({ meta: { constructor: 'Acme', toString: 'x' }, other: 1, valueOf: 2 });
    expect(after.tools.constructor).toEqual({ enabled: true, instructions: '' });
  });

  it('bounds what is stored, not only each update: tools and keys add up', async () => {
    const agent = await createAgent({ tools: {} });
    const tools = (from: number) =>
      Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`tool_${from + i}`, { enabled: true }]));
    expect((await update(agent.id, { agent: { tools: tools(0) } })).statusCode).toBe(200);
    const over = await update(agent.id, { agent: { tools: tools(30) } });
    expect(over.statusCode).toBe(400);
    expect(over.json().error.details).toEqual([{ location: 'body', path: '/agent/tools', message: 'too many keys' }]);
    const keys = (from: number) => Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${from + i}`, i]));
    expect((await update(agent.id, { agent: { data: keys(0) } })).statusCode).toBe(200);
    expect((await update(agent.id, { agent: { data: keys(60) } })).statusCode).toBe(400);
    const after = await stored(agent.id);
    expect(Object.keys(after.tools)).toHaveLength(30);
    expect(Object.keys(after.data)).toHaveLength(60);
  });

  it('with nothing to change answers the agent and writes nothing', async () => {
    const agent = await createAgent();
    const res = await update(agent.id, { agent: {} });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      agent: { id: agent.id, name: 'Sofia', type: 'basic' },
      business_id: tenant.businessId,
    });
    expect((await stored(agent.id)).updated_at).toBe(agent.updated_at);
  });

  it('PUT behaves as PATCH', async () => {
    const agent = await createAgent();
    const res = await update(agent.id, { agent: { follow_up_settings: { after_minutes: 30 } } }, 'PUT');
    expect(res.statusCode).toBe(200);
    expect(res.json().agent.follow_up_settings).toEqual({ after_minutes: 30 });
    const again = await update(agent.id, { agent: { follow_up_settings: { message: 'Still there?' } } }, 'PUT');
    expect(again.json().agent.follow_up_settings).toEqual({ after_minutes: 30, message: 'Still there?' });
    expect((await stored(agent.id)).system_prompt).toBe('You answer questions about orders.');
  });

  it('keeps both of two updates made at once', async () => {
    const agent = await createAgent();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => update(agent.id, { agent: { data: { [`key${i}`]: i } } })),
    );
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
    expect((await stored(agent.id)).data).toEqual({ key0: 0, key1: 1, key2: 2, key3: 3, key4: 4, key5: 5 });
  });

  it('answers 400 for bad bodies and changes nothing', async () => {
    const agent = await createAgent();
    const bodies: unknown[] = [
      {},
      { agent: 'x' },
      { agent: [] },
      { agent: {}, extra: 1 },
      { agent: { id: UNKNOWN } },
      { agent: { business_id: other.businessId } },
      { agent: { created_at: '2026-01-01T00:00:00Z' } },
      { agent: { unknown_setting: 1 } },
      { agent: { name: '' } },
      { agent: { name: 5 } },
      { agent: { name: 'x'.repeat(201) } },
      { agent: { system_prompt: 'x'.repeat(50_001) } },
      { agent: { model: '' } },
      { agent: { prompt_config: 'formal' } },
      { agent: { prompt_config: ['a'] } },
      { agent: { tools: { human_handoff: true } } },
      { agent: { tools: { human_handoff: { enabled: 'yes' } } } },
      { agent: { tools: { human_handoff: { enabled: true, extra: 1 } } } },
      { agent: { tools: { 'bad name': { enabled: true } } } },
      { agent: null },
      { agent: { data: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) } },
      { agent: { data: { ['k'.repeat(101)]: 1 } } },
      { agent: { prompt_config: { '': 1 } } },
    ];
    for (const body of bodies) {
      const res = await update(agent.id, body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 100)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const malformed = await t.app.inject({
      method: 'PATCH',
      url: `/external/v2/agents/${agent.id}`,
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: '{"agent":',
    });
    expect(malformed.statusCode).toBe(400);
    const after = await stored(agent.id);
    expect(after).toEqual({ ...agent, updated_at: agent.updated_at });
  });

  it('refuses a JSON field that would grow past 64 KiB, keeping what was stored', async () => {
    const agent = await createAgent();
    const half = 'x'.repeat(40 * 1024);
    expect((await update(agent.id, { agent: { data: { a: half } } })).statusCode).toBe(200);
    const res = await update(agent.id, { agent: { data: { b: half } } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([{ location: 'body', path: '/agent/data', message: 'too large' }]);
    expect((await stored(agent.id)).data).toEqual({ a: half });
  });

  it("answers 404 for another business's agent and for an unknown one, leaving them unchanged", async () => {
    const agent = await createAgent();
    const foreign = await update(agent.id, { agent: { name: 'Taken' } }, 'PATCH', other.headers);
    expect(foreign.statusCode).toBe(404);
    expect((await update(agent.id, { agent: { name: 'Taken' } }, 'PUT', other.headers)).statusCode).toBe(404);
    expect((await stored(agent.id)).name).toBe('Sofia');
    expect((await update(UNKNOWN, { agent: { name: 'x' } })).statusCode).toBe(404);
    expect((await update('nope', { agent: { name: 'x' } })).statusCode).toBe(400);
    expect((await update(agent.id, { agent: { name: 'x' } }, 'PATCH', {})).statusCode).toBe(401);
  });
});

describe('the OpenAPI document', () => {
  it('describes the agent endpoints with their error statuses', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const path = doc.paths['/external/v2/agents/{agent_id}'];
    expect(Object.keys(path).sort()).toEqual(['get', 'patch', 'put']);
    expect(Object.keys(path.patch.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404']));
    expect(path.patch.requestBody.content['application/json'].schema.properties.agent.properties).toHaveProperty(
      'tools',
    );
  });
});
