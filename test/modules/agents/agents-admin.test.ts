import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

const create = (payload: unknown, bid = tenant.businessId, headers: Record<string, string> = adminHeaders) =>
  t.app.inject({ method: 'POST', url: `/admin/v1/businesses/${bid}/agents`, headers, payload: payload as object });

describe('POST /admin/v1/businesses/:bid/agents', () => {
  it('creates an agent with a default type', async () => {
    const res = await create({ name: 'Sales bot' });
    expect(res.statusCode).toBe(201);
    const { agent } = res.json();
    expect(agent).toEqual({
      id: agent.id,
      name: 'Sales bot',
      type: 'basic',
      system_prompt: '',
      model: null,
      prompt_config: {},
      tools: {},
      data: {},
      activation_rules: {},
      follow_up_settings: {},
      inactivity_run_settings: {},
      status: 'inactive',
      inactive_reason: 'no language model is configured (LLM_URL is unset): agents do not answer',
      created_at: agent.created_at,
      updated_at: agent.created_at,
    });
    const row = await t.database.db
      .selectFrom('agents')
      .selectAll()
      .where('id', '=', agent.id)
      .executeTakeFirstOrThrow();
    expect(row.business_id).toBe(tenant.businessId);
    const typed = await create({
      name: 'Support',
      type: 'support',
      model: 'small',
      data: { shop: 'north' },
      tools: { human_handoff: { enabled: true }, refunds: { enabled: false, instructions: 'Never.' } },
    });
    expect(typed.json().agent).toMatchObject({
      type: 'support',
      model: 'small',
      data: { shop: 'north' },
      tools: {
        human_handoff: { enabled: true, instructions: '' },
        refunds: { enabled: false, instructions: 'Never.' },
      },
    });
  });

  it('answers 404 for an unknown business, 401 without the token, 400 for bad bodies', async () => {
    expect((await create({ name: 'x' }, '01900000-0000-7000-8000-000000000000')).statusCode).toBe(404);
    expect((await create({ name: 'x' }, tenant.businessId, {})).statusCode).toBe(401);
    const bad = [
      {},
      { name: '' },
      { name: 'x'.repeat(201) },
      { name: 'x', extra: 1 },
      { name: 5 },
      { name: 'x', config: {} },
      { name: 'x', tools: { handoff: { instructions: 'no enabled' } } },
      { name: 'x', prompt_config: [] },
      { name: 'x', model: null },
      { name: 'x', data: { big: 'x'.repeat(65 * 1024) } },
    ];
    for (const body of bad) {
      expect((await create(body)).statusCode, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('GET /admin/v1/businesses/:bid/agents', () => {
  it("lists the business's agents oldest first, without their configuration, bounded by limit", async () => {
    const fresh = await createTenant(t.app, 'Lists');
    const names = ['One', 'Two', 'Three'];
    for (const name of names)
      expect((await create({ name, system_prompt: 'secret sauce' }, fresh.businessId)).statusCode).toBe(201);
    const list = (query = '', bid = fresh.businessId, headers: Record<string, string> = adminHeaders) =>
      t.app.inject({ url: `/admin/v1/businesses/${bid}/agents${query}`, headers });
    const res = await list();
    expect(res.statusCode).toBe(200);
    expect(res.json().agents.map((a: { name: string }) => a.name)).toEqual(names);
    expect(Object.keys(res.json().agents[0]).sort()).toEqual([
      'created_at',
      'id',
      'inactive_reason',
      'model',
      'name',
      'status',
      'type',
      'updated_at',
    ]);
    expect((await list('?limit=2')).json().agents).toHaveLength(2);
    // Another business's agents are not listed.
    expect((await list('', tenant.businessId)).json().agents.map((a: { name: string }) => a.name)).not.toContain('One');
    expect((await list('?limit=0')).statusCode).toBe(400);
    expect((await list('?limit=501')).statusCode).toBe(400);
    expect((await list('?other=1')).statusCode).toBe(400);
    expect((await list('', '01900000-0000-7000-8000-000000000000')).statusCode).toBe(404);
    expect((await list('', fresh.businessId, {})).statusCode).toBe(401);
  });
});
