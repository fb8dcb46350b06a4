import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders } from '../../helpers/tenants.ts';
import { createWhatsAppChannel } from '../inbound/whatsapp-helpers.ts';
import { call, refused, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

let f: SettingsFixture;
let agentId: string;
let otherAgentId: string;
let channelId: string;
let otherChannelId: string;

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
  channelId = (await createWhatsAppChannel(f.t.app, f.businessId)).id;
  otherChannelId = (await createWhatsAppChannel(f.t.app, f.otherBusinessId)).id;
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

describe("an AI agent's activation rules", () => {
  const rulesOf = async (id: string) =>
    (await call(f.t.app, f.admin, 'GET', `/agents/${id}`)).json().agent.activation_rules as Record<string, unknown>;
  const patchRules = (rules: unknown, id = agentId) =>
    call(f.t.app, f.owner, 'PATCH', `/agents/${id}`, { agent: { activation_rules: rules } });

  it('are saved whole and merged by a later change, and enabled false makes the agent say why it does not answer', async () => {
    const rules = {
      enabled: true,
      channels: [channelId],
      contact_tags: { any: ['vip'], none: ['no_ai'] },
      opening_hours: {
        enabled: true,
        time_zone: 'Europe/Madrid',
        windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '18:00' }],
      },
      debounce_seconds: 1.5,
    };
    const saved = await patchRules(rules);
    expect(saved.statusCode, saved.body).toBe(200);
    expect(saved.json().agent.activation_rules).toEqual(rules);

    // A change of one key keeps the others; an array replaces the stored one.
    const changed = await patchRules({ enabled: false, contact_tags: { any: [] }, opening_hours: { enabled: false } });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(await rulesOf(agentId)).toEqual({
      ...rules,
      enabled: false,
      contact_tags: { any: [], none: ['no_ai'] },
      opening_hours: { ...rules.opening_hours, enabled: false },
    });
    const listed = (await call(f.t.app, f.agent, 'GET', '/agents')).json().agents as Record<string, unknown>[];
    expect(listed.find((agent) => agent.id === agentId)).toMatchObject({
      status: 'inactive',
      inactive_reason: expect.any(String),
    });
  });

  it('refuses bad rules with 400 and the path of the fault, keeping the stored ones', async () => {
    const before = await rulesOf(agentId);
    const hours = (change: object) => ({
      opening_hours: {
        enabled: true,
        time_zone: 'Europe/Madrid',
        windows: [{ days: ['mon'], from: '09:00', to: '17:00' }],
        ...change,
      },
    });
    for (const [rules, path] of [
      [hours({ time_zone: 'Mars/Olympus' }), '/agent/activation_rules/opening_hours/time_zone'],
      [hours({ windows: [] }), '/agent/activation_rules/opening_hours/windows'],
      [
        hours({ windows: [{ days: ['mon'], from: '10:00', to: '10:00' }] }),
        '/agent/activation_rules/opening_hours/windows/0',
      ],
      [
        hours({ windows: [{ days: ['funday'], from: '10:00', to: '11:00' }] }),
        '/agent/activation_rules/opening_hours/windows/0/days/0',
      ],
      [
        hours({ windows: [{ days: ['mon'], from: '9:00', to: '11:00' }] }),
        '/agent/activation_rules/opening_hours/windows/0/from',
      ],
      [
        hours({ windows: [{ days: ['mon'], from: '09:00', to: '11:00', note: 'x' }] }),
        '/agent/activation_rules/opening_hours/windows/0',
      ],
      [{ debounce_seconds: 61 }, '/agent/activation_rules/debounce_seconds'],
      [{ debounce_seconds: -1 }, '/agent/activation_rules/debounce_seconds'],
      [{ contact_tags: { any: ['vip', 'vip'] } }, '/agent/activation_rules/contact_tags/any'],
      [{ contact_tags: { some: ['vip'] } }, '/agent/activation_rules/contact_tags'],
      [{ channels: ['not-a-uuid'] }, '/agent/activation_rules/channels/0'],
      [{ enabled: 'yes' }, '/agent/activation_rules/enabled'],
      [{ colour: 'red' }, '/agent/activation_rules'],
    ] as const) {
      const res = await patchRules(rules);
      expect(res.statusCode, JSON.stringify(rules)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
      expect(
        res.json().error.details.map((d: { path: string }) => d.path),
        JSON.stringify(rules),
      ).toContain(path);
    }
    expect(await rulesOf(agentId)).toEqual(before);
  });

  it("refuses another business's channel with 400, and another business's agent with 404, changing neither", async () => {
    const before = await rulesOf(agentId);
    const foreign = await patchRules({ channels: [channelId, otherChannelId] });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error.details).toEqual([
      expect.objectContaining({ path: '/agent/activation_rules/channels/1', message: 'not a channel of the business' }),
    ]);
    expect(await rulesOf(agentId)).toEqual(before);

    const theirsBefore = (await call(f.t.app, f.otherOwner, 'GET', `/agents/${otherAgentId}`)).json().agent;
    await refused(patchRules({ enabled: false }, otherAgentId), 404, 'not_found');
    await refused(patchRules({ channels: [otherChannelId] }, otherAgentId), 404, 'not_found');
    const theirsAfter = (await call(f.t.app, f.otherOwner, 'GET', `/agents/${otherAgentId}`)).json().agent;
    expect(theirsAfter).toEqual(theirsBefore);
  });
});
