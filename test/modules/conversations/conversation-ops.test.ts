import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { contactWithConversation } from '../exports/export-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EVENTS_PER_MINUTE: '100000' });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const op = (method: 'POST' | 'PUT', bid: string, id: string, name: string, payload: unknown) =>
  t.app.inject({
    method,
    url: `/admin/v1/businesses/${bid}/conversations/${id}/${name}`,
    headers: adminHeaders,
    payload: payload as object,
  });

async function eventsOf(conversationId: string) {
  const since = new Date(Date.now() - 60_000).toISOString();
  // An explicit until: the default (now) leaves out an event written in the same millisecond.
  const until = new Date(Date.now() + 1000).toISOString();
  const res = await t.app.inject({
    method: 'GET',
    url: `/external/v2/events?since=${since}&until=${until}&limit=500`,
    headers: tenant.headers,
  });
  return (
    res.json().events as {
      conversation_id: string;
      type: string;
      actor_type: string;
      user: unknown;
      agent: unknown;
      data: unknown;
    }[]
  ).filter((e) => e.conversation_id === conversationId);
}

async function setup() {
  const db = t.database.db;
  const { conversation } = await contactWithConversation(db, tenant.businessId);
  const user = await db
    .insertInto('users')
    .values({ business_id: tenant.businessId, id: newId(), email: `u${newId()}@acme.test`, name: 'Ana' })
    .returning(['id', 'name', 'email'])
    .executeTakeFirstOrThrow();
  return { conversation, user };
}

describe('conversation operations write their events', () => {
  it('resolve: conversation_resolved by the team member', async () => {
    const { conversation, user } = await setup();
    const res = await op('POST', tenant.businessId, conversation.id, 'resolve', {
      user_id: user.id,
      reason: 'refund sent',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().conversation).toMatchObject({ id: conversation.id, manual_control: false });
    expect(await eventsOf(conversation.id)).toMatchObject([
      { type: 'conversation_resolved', actor_type: 'human', user, agent: null, data: { reason: 'refund sent' } },
    ]);
  });

  it('manual control: activated, locked, unlocked + released, each once', async () => {
    const { conversation, user } = await setup();
    expect(
      (
        await op('POST', tenant.businessId, conversation.id, 'manual-control', { user_id: user.id, active: true })
      ).json().conversation,
    ).toMatchObject({ manual_control: true, manual_control_locked: false });
    expect(
      (await op('POST', tenant.businessId, conversation.id, 'manual-control', { user_id: user.id, active: true }))
        .statusCode,
    ).toBe(200);
    expect(
      (
        await op('POST', tenant.businessId, conversation.id, 'manual-control', {
          user_id: user.id,
          locked: true,
          reason: 'vip',
        })
      ).json().conversation,
    ).toMatchObject({ manual_control: true, manual_control_locked: true });
    expect(
      (
        await op('POST', tenant.businessId, conversation.id, 'manual-control', { active: false, reason: 'timer' })
      ).json().conversation,
    ).toMatchObject({ manual_control: false, manual_control_locked: false });
    expect((await eventsOf(conversation.id)).map((e) => [e.type, e.actor_type, e.data])).toEqual([
      ['manual_control_activated', 'human', { reason: null }],
      ['manual_control_locked', 'human', { reason: 'vip' }],
      ['manual_control_unlocked', 'system', { reason: 'timer' }],
      ['manual_control_released', 'system', { reason: 'timer' }],
    ]);
  });

  it('a pin on a conversation under AI writes activated then locked', async () => {
    const { conversation } = await setup();
    await op('POST', tenant.businessId, conversation.id, 'manual-control', { locked: true });
    expect((await eventsOf(conversation.id)).map((e) => e.type)).toEqual([
      'manual_control_activated',
      'manual_control_locked',
    ]);
  });

  it('archive and unarchive one conversation', async () => {
    const { conversation, user } = await setup();
    const archived = await op('POST', tenant.businessId, conversation.id, 'archive', { user_id: user.id });
    expect(archived.json().conversation.closed_at).toMatch(/Z$/);
    expect((await op('POST', tenant.businessId, conversation.id, 'archive', {})).statusCode).toBe(200);
    expect(
      (await op('POST', tenant.businessId, conversation.id, 'unarchive', {})).json().conversation.closed_at,
    ).toBeNull();
    expect((await eventsOf(conversation.id)).map((e) => [e.type, e.actor_type, e.data])).toEqual([
      ['conversation_archived', 'human', { origin: 'dashboard' }],
      ['conversation_unarchived', 'system', { origin: 'system' }],
    ]);
  });

  it('AI agent: assigned, switched, removed', async () => {
    const { conversation } = await setup();
    const mk = (name: string) =>
      t.database.db
        .insertInto('agents')
        .values({ business_id: tenant.businessId, id: newId(), name })
        .returning(['id', 'name'])
        .executeTakeFirstOrThrow();
    const a = await mk('A');
    const b = await mk('B');
    for (const agentId of [a.id, a.id, b.id, null])
      expect(
        (await op('PUT', tenant.businessId, conversation.id, 'agent', { agent_id: agentId })).json().conversation
          .agent_id,
      ).toBe(agentId);
    expect((await eventsOf(conversation.id)).map((e) => [e.type, e.agent, e.data])).toEqual([
      ['agent_assigned', a, { from_agent: null, to_agent: a.id }],
      ['agent_switched', b, { from_agent: a.id, to_agent: b.id }],
      ['agent_removed', b, { from_agent: b.id, to_agent: null }],
    ]);
  });

  it("answers 404 for another business's conversation, user or agent, and 400 for bad bodies", async () => {
    const { conversation } = await setup();
    const foreign = await contactWithConversation(t.database.db, other.businessId);
    expect((await op('POST', tenant.businessId, foreign.conversation.id, 'resolve', {})).statusCode).toBe(404);
    expect((await op('POST', tenant.businessId, conversation.id, 'resolve', { user_id: newId() })).statusCode).toBe(
      404,
    );
    expect((await op('PUT', tenant.businessId, conversation.id, 'agent', { agent_id: newId() })).statusCode).toBe(404);
    for (const [name, body] of [
      ['manual-control', {}],
      ['manual-control', { active: false, locked: true }],
      ['manual-control', { active: 'yes' }],
      ['resolve', { reason: '' }],
      ['resolve', { extra: 1 }],
      ['agent', {}],
    ] as const) {
      const res = await op(name === 'agent' ? 'PUT' : 'POST', tenant.businessId, conversation.id, name, body);
      expect(res.statusCode, `${name} ${JSON.stringify(body)}`).toBe(400);
    }
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: `/admin/v1/businesses/${tenant.businessId}/conversations/${conversation.id}/resolve`,
          payload: {},
        })
      ).statusCode,
    ).toBe(401);
  });
});

describe('public operations write their events', () => {
  it('PATCH /contacts writes contact_field_changed and close writes conversation_archived', async () => {
    const { conversation } = await setup();
    const since = new Date(Date.now() - 1000).toISOString();
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/external/v2/contacts/${conversation.contact_id}`,
      headers: tenant.headers,
      payload: { name: 'Grace Hopper' },
    });
    expect(patch.statusCode).toBe(200);
    await t.app.inject({
      method: 'POST',
      url: `/external/v2/contacts/${conversation.contact_id}/conversation/close`,
      headers: tenant.headers,
    });
    const until = new Date(Date.now() + 1000).toISOString();
    const res = await t.app.inject({
      method: 'GET',
      url: `/external/v2/events?since=${since}&until=${until}&types=contact_field_changed,conversation_archived`,
      headers: tenant.headers,
    });
    const mine = res.json().events.filter((e: { contact_id: string }) => e.contact_id === conversation.contact_id);
    expect(mine.map((e: { type: string; actor_type: string }) => [e.type, e.actor_type])).toEqual([
      ['contact_field_changed', 'api'],
      ['conversation_archived', 'api'],
    ]);
    expect(mine[0].data.changes.map((c: { field: string }) => c.field).sort()).toEqual(['first_name', 'last_name']);
  });
});
