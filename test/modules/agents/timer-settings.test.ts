import { sql } from 'kysely';
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

const create = (body: Record<string, unknown>, businessId = tenant.businessId) =>
  t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/agents`,
    headers: adminHeaders,
    payload: { name: 'Sofia', ...body },
  });

const update = (agentId: string, agent: Record<string, unknown>, headers = tenant.headers) =>
  t.app.inject({ method: 'PATCH', url: `/external/v2/agents/${agentId}`, headers, payload: { agent } });

describe("an agent's follow_up_settings and inactivity_run_settings", () => {
  it('are stored as sent and merged by a partial update', async () => {
    const created = await create({
      follow_up_settings: { enabled: true, after_minutes: 30, max_follow_ups: 2, message: '¿Sigues ahí?' },
      inactivity_run_settings: { enabled: true, after_minutes: 0.5, action: 'archive' },
    });
    expect(created.statusCode).toBe(201);
    const agent = created.json().agent;
    const res = await update(agent.id, {
      follow_up_settings: { max_follow_ups: 3, message: '' },
      inactivity_run_settings: { manual_control_release_minutes: 90 },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().agent).toMatchObject({
      follow_up_settings: { enabled: true, after_minutes: 30, max_follow_ups: 3, message: '' },
      inactivity_run_settings: {
        enabled: true,
        after_minutes: 0.5,
        action: 'archive',
        manual_control_release_minutes: 90,
      },
    });
  });

  it('refuse bad values and unknown keys with 400, on create and on update, changing nothing', async () => {
    const bad: Record<string, unknown>[] = [
      { follow_up_settings: { enabled: 'yes' } },
      { follow_up_settings: { after_minutes: 0 } },
      { follow_up_settings: { after_minutes: -5 } },
      { follow_up_settings: { after_minutes: 50_000 } },
      { follow_up_settings: { max_follow_ups: 0 } },
      { follow_up_settings: { max_follow_ups: 1.5 } },
      { follow_up_settings: { max_follow_ups: 11 } },
      { follow_up_settings: { message: 'x'.repeat(4097) } },
      { follow_up_settings: { every: 'day' } },
      { inactivity_run_settings: { action: 'delete' } },
      { inactivity_run_settings: { after_minutes: '60' } },
      { inactivity_run_settings: { manual_control_release_minutes: -1 } },
      { inactivity_run_settings: { notify: true } },
    ];
    const agent = (await create({ follow_up_settings: { enabled: true } })).json().agent;
    for (const body of bad) {
      const created = await create(body);
      expect(created.statusCode, JSON.stringify(body)).toBe(400);
      expect(created.json().error.code).toBe('validation_error');
      const updated = await update(agent.id, body);
      expect(updated.statusCode, JSON.stringify(body)).toBe(400);
    }
    const read = await t.app.inject({ url: `/external/v2/agents/${agent.id}`, headers: tenant.headers });
    expect(read.json().agent).toMatchObject({ follow_up_settings: { enabled: true }, inactivity_run_settings: {} });
  });

  it('check what a merge would store: settings kept from before their schema are refused with the path', async () => {
    const agent = (await create({})).json().agent;
    await sql`update agents set follow_up_settings = '{"after_minutes": "soon"}'
      where business_id = ${tenant.businessId} and id = ${agent.id}`.execute(t.database.db);
    const res = await update(agent.id, { follow_up_settings: { enabled: true } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([
      expect.objectContaining({ path: '/agent/follow_up_settings/after_minutes' }),
    ]);
    // Another setting of the agent still changes.
    expect((await update(agent.id, { name: 'Sofía' })).statusCode).toBe(200);
  });

  it("answer 404 for another business's agent", async () => {
    const theirs = (await create({}, other.businessId)).json().agent;
    const res = await update(theirs.id, { follow_up_settings: { enabled: true } });
    expect(res.statusCode).toBe(404);
  });
});
