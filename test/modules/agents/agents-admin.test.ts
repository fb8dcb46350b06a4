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
    expect(agent).toEqual({ id: agent.id, name: 'Sales bot', type: 'basic', config: {}, created_at: agent.created_at });
    const row = await t.database.db.selectFrom('agents').selectAll().where('id', '=', agent.id).executeTakeFirstOrThrow();
    expect(row.business_id).toBe(tenant.businessId);
    const typed = await create({ name: 'Support', type: 'support', config: { model: 'small' } });
    expect(typed.json().agent).toMatchObject({ type: 'support', config: { model: 'small' } });
  });

  it('answers 404 for an unknown business, 401 without the token, 400 for bad bodies', async () => {
    expect((await create({ name: 'x' }, '01900000-0000-7000-8000-000000000000')).statusCode).toBe(404);
    expect((await create({ name: 'x' }, tenant.businessId, {})).statusCode).toBe(401);
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 'x', extra: 1 }, { name: 5 }]) {
      expect((await create(body)).statusCode, JSON.stringify(body)).toBe(400);
    }
  });
});
