import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders } from '../../helpers/tenants.ts';
import { call, refused, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

let f: SettingsFixture;
let agentId: string;
let otherAgentId: string;

const createAgent = async (businessId: string, payload: object) => {
  const res = await f.t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/agents`,
    headers: adminHeaders,
    payload,
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().agent.id as string;
};

beforeAll(async () => {
  f = await settingsFixture();
  agentId = await createAgent(f.businessId, {
    name: 'Sales bot',
    prompt_config: { tone: 'warm', limits: { words: 100, emoji: false } },
    tools: { lookup: { enabled: true, instructions: 'find orders' } },
  });
  otherAgentId = await createAgent(f.otherBusinessId, { name: 'Theirs' });
});
afterAll(() => f.t.close());

describe('AI agent settings', () => {
  it('lists the agents and reads one', async () => {
    const listed = await call(f.t.app, f.admin, 'GET', '/agents');
    expect(listed.statusCode).toBe(200);
    expect(listed.json().agents.map((a: { id: string }) => a.id)).toEqual([agentId]);
    const one = await call(f.t.app, f.admin, 'GET', `/agents/${agentId}`);
    expect(one.json().agent).toMatchObject({ id: agentId, name: 'Sales bot', tools: { lookup: { enabled: true } } });
  });

  it('merges a change as PATCH /external/v2/agents/:id does, nulls dropped', async () => {
    const res = await call(f.t.app, f.owner, 'PATCH', `/agents/${agentId}`, {
      agent: {
        system_prompt: 'Be brief',
        model: null,
        prompt_config: { limits: { words: 50 } },
        tools: { lookup: { enabled: false }, refund: { enabled: true } },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      business_id: f.businessId,
      agent: {
        id: agentId,
        name: 'Sales bot',
        type: 'basic',
        system_prompt: 'Be brief',
        prompt_config: { tone: 'warm', limits: { words: 50, emoji: false } },
        tools: {
          lookup: { enabled: false, instructions: 'find orders' },
          refund: { enabled: true, instructions: '' },
        },
      },
    });
    // The public API reads the same configuration.
    const read = (await call(f.t.app, f.admin, 'GET', `/agents/${agentId}`)).json().agent;
    expect(read.model).toBeNull();
    expect(read.prompt_config).toEqual({ tone: 'warm', limits: { words: 50, emoji: false } });
  });

  it('refuses bad input and unknown fields with 400', async () => {
    for (const body of [
      { agent: { colour: 'red' } },
      { agent: { name: '' } },
      { agent: { tools: { 'bad name!': { enabled: true } } } },
      { agent: { tools: { fresh: { instructions: 'no enabled' } } } },
      { agent: {}, extra: true },
      {},
    ]) {
      const res = await call(f.t.app, f.admin, 'PATCH', `/agents/${agentId}`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });

  it('answers 404 for another business’s agent and 403 to an agent, who reads only the list', async () => {
    await refused(call(f.t.app, f.admin, 'GET', `/agents/${otherAgentId}`), 404, 'not_found');
    await refused(
      call(f.t.app, f.admin, 'PATCH', `/agents/${otherAgentId}`, { agent: { name: 'Mine' } }),
      404,
      'not_found',
    );
    expect((await call(f.t.app, f.otherOwner, 'GET', '/agents')).body).not.toContain(agentId);
    // The list names the agents a conversation can be assigned to, for every role; their configuration is not in it.
    const list = await call(f.t.app, f.agent, 'GET', '/agents');
    expect(list.statusCode).toBe(200);
    expect(list.json().agents).toContainEqual(expect.objectContaining({ id: agentId, name: expect.any(String) }));
    expect(list.body).not.toContain('system_prompt');
    await refused(call(f.t.app, f.agent, 'GET', `/agents/${agentId}`), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'PATCH', `/agents/${agentId}`, { agent: { name: 'Mine' } }), 403, 'forbidden');
  });
});
