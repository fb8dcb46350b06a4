import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { insertMessage } from '../../helpers/factories.ts';
import {
  createAgent,
  createTemplate,
  inboundContact,
  messageRow,
  settled,
  withSendingChannel,
  type SendingFixture,
} from '../sending/sending.fixtures.ts';
import { createWebhook } from '../webhooks/webhook-harness.ts';

// What a team member does to a conversation from the dashboard, over HTTP with a signed-in session:
// each action's exported event with the user as actor, replies through the fake Graph API without a
// message_created webhook, and another business's ids answering 404.

let f: SendingFixture;
let other: Tenant;
let agent: Browser;
let agentUser: { id: string; email: string; name: string };
let webhookId: string;

beforeAll(async () => {
  f = await withSendingChannel();
  other = await createTenant(f.t.app, 'Other');
  const email = `agent-${newId()}@acme.test`;
  const { id } = await createUser(f.t.app, f.tenant.businessId, {
    email,
    name: 'Ana Agent',
    password: 'correct horse battery',
    role: 'agent',
  });
  agentUser = { id, email, name: 'Ana Agent' };
  agent = await signIn(f.t.app, email, 'correct horse battery');
  webhookId = (await createWebhook(f.t.app, f.tenant.businessId, { url: 'http://127.0.0.1:9/hook' })).webhook.id;
});
afterAll(() => f.close());

const app = () => f.t.app;
const db = () => f.t.database.db;

async function eventsOf(conversationId: string) {
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const until = new Date(Date.now() + 1000).toISOString();
  const res = await app().inject({
    method: 'GET',
    url: `/external/v2/events?since=${since}&until=${until}&limit=500`,
    headers: f.tenant.headers,
  });
  expect(res.statusCode).toBe(200);
  return (
    res.json().events as { conversation_id: string; type: string; actor_type: string; user: unknown; data: unknown }[]
  ).filter((e) => e.conversation_id === conversationId);
}

async function createTeam(businessId: string, name: string): Promise<string> {
  const res = await app().inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/teams`,
    headers: adminHeaders,
    payload: { name },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().team.id;
}

const deliveriesOf = (messageId: string) =>
  db().selectFrom('webhook_deliveries').select('id').where('message_id', '=', messageId).execute();

const changesOf = (conversationId: string) =>
  db()
    .selectFrom('domain_events')
    .select(['type', 'data'])
    .where('conversation_id', '=', conversationId)
    .where('type', '=', 'conversation_changed')
    .execute();

describe('replies', () => {
  it('a text inside the window reaches the Graph API as the user, with no message_created delivery', async () => {
    const { conversation, phone } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const quoted = await db()
      .selectFrom('messages')
      .select(['id', 'text'])
      .where('conversation_id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    const res = await call(app(), agent, 'POST', `/conversations/${conversation.id}/messages`, {
      text: 'Hello from the team',
      reply_to: quoted.id,
    });
    expect(res.statusCode, res.body).toBe(202);
    const { message } = res.json();
    expect(message).toMatchObject({
      kind: 'message',
      conversation_id: conversation.id,
      direction: 'outbound',
      type: 'text',
      text: 'Hello from the team',
      status: 'PENDING',
      reply_to: { id: quoted.id, text: quoted.text, direction: 'inbound' },
      sender: { type: 'human', user: agentUser, agent: null },
    });
    const row = await settled(f.t, message.id);
    expect(row).toMatchObject({ status: 'SENT', sender_type: 'human', user_id: agentUser.id, reply_to_id: quoted.id });
    const sent = f.fake.sends().find((r) => (r.body as { to?: string }).to === phone);
    expect(sent?.body).toMatchObject({ type: 'text', text: { body: 'Hello from the team' } });
    expect(await deliveriesOf(message.id)).toEqual([]);
    // The domain event is written (the live view takes it); only the webhook rule leaves it out.
    const created = await db()
      .selectFrom('domain_events')
      .select('subject_id')
      .where('type', '=', 'message_created')
      .where('subject_id', '=', message.id)
      .execute();
    expect(created).toHaveLength(1);

    // The same send through the public API does fire it: the assertion above can fail.
    const api = await app().inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: { to: phone, from: 'whatsapp', channel_uuid: f.channel.id, type: 'text', content: { text: 'api' } },
    });
    expect(api.statusCode, api.body).toBe(200);
    expect(await deliveriesOf(api.json().message.uuid)).toHaveLength(1);
    expect(webhookId).toBeTruthy();
  });

  it("a quoted reply names the quoted message's provider id to the Graph API, and only when it has one", async () => {
    const { conversation, phone } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const withoutId = await db()
      .selectFrom('messages')
      .select('id')
      .where('conversation_id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    const providerId = `wamid.${newId().replaceAll('-', '')}`;
    const quoted = await insertMessage(db(), f.tenant.businessId, conversation, {
      channel_id: f.channel.id,
      provider_message_id: providerId,
      sender_address: phone,
      recipient_address: f.channel.identifier,
    });
    const reply = async (body: Record<string, unknown>) => {
      const res = await call(app(), agent, 'POST', `/conversations/${conversation.id}/messages`, body);
      expect(res.statusCode, res.body).toBe(202);
      const row = await settled(f.t, res.json().message.id);
      expect(row.status).toBe('SENT');
      const sent = f.fake.sends().filter((r) => (r.body as { to?: string }).to === phone);
      return { row, body: sent.at(-1)?.body as { text?: { body: string }; context?: unknown } };
    };

    const answer = await reply({ text: 'About that', reply_to: quoted.id });
    expect(answer.body).toMatchObject({ text: { body: 'About that' }, context: { message_id: providerId } });
    // Our own reply, once sent, has the id the Graph API gave it: quoting it names that id.
    const again = await reply({ text: 'As I said', reply_to: answer.row.id });
    expect(answer.row.provider_message_id).toEqual(expect.any(String));
    expect(again.body.context).toEqual({ message_id: answer.row.provider_message_id });
    // A quoted message without a provider id (imported, say), and a reply quoting nothing: no context.
    const noId = await reply({ text: 'Old one', reply_to: withoutId.id });
    expect(noId.row.reply_to_id).toBe(withoutId.id);
    expect(noId.body).toMatchObject({ text: { body: 'Old one' } });
    expect(noId.body).not.toHaveProperty('context');
    const plain = await reply({ text: 'Plain' });
    expect(plain.body).not.toHaveProperty('context');
  });

  it('outside the window a text answers 400 template_required, as the public API does, and a template goes', async () => {
    const { conversation, phone } = await inboundContact(f.t, f.tenant, f.channel, 30);
    const compose = await call(app(), agent, 'GET', `/conversations/${conversation.id}/compose`);
    expect(compose.statusCode).toBe(200);
    expect(compose.json()).toMatchObject({ window_open: false });
    expect(Date.parse(compose.json().window_ends_at)).toBeLessThan(Date.now());

    const text = await call(app(), agent, 'POST', `/conversations/${conversation.id}/messages`, { text: 'hi' });
    expect(text.statusCode).toBe(400);
    expect(text.json().error.code).toBe('template_required');
    // The same rule through the public API: the same status and code.
    const api = await app().inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: { to: phone, from: 'whatsapp', channel_uuid: f.channel.id, type: 'text', content: { text: 'hi' } },
    });
    expect(api.statusCode).toBe(text.statusCode);
    expect(api.json().error.code).toBe(text.json().error.code);

    const name = `order_${newId().slice(-8)}`;
    const templateId = await createTemplate(app(), f.tenant, { name, body: 'Hi {{name}}, your order is ready' });
    const offered = (await call(app(), agent, 'GET', `/conversations/${conversation.id}/compose`)).json().templates;
    expect(offered).toContainEqual({
      id: templateId,
      name,
      language: 'en_US',
      body: 'Hi {{name}}, your order is ready',
      variables: ['name'],
    });
    const missing = await call(app(), agent, 'POST', `/conversations/${conversation.id}/messages`, {
      template_id: templateId,
    });
    expect(missing.statusCode).toBe(400);
    const res = await call(app(), agent, 'POST', `/conversations/${conversation.id}/messages`, {
      template_id: templateId,
      variables: { name: 'Rui' },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().message).toMatchObject({ type: 'template', text: 'Hi Rui, your order is ready' });
    expect((await settled(f.t, res.json().message.id)).status).toBe('SENT');
    const sent = f.fake.sends().find((r) => (r.body as { to?: string }).to === phone);
    expect(sent?.body).toMatchObject({ type: 'template', template: { name } });
  });

  it('the window is open in compose within 24 hours of the contact writing', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 2);
    const body = (await call(app(), agent, 'GET', `/conversations/${conversation.id}/compose`)).json();
    expect(body.window_open).toBe(true);
    const endsIn = Date.parse(body.window_ends_at) - Date.now();
    expect(endsIn).toBeGreaterThan(21 * 3_600_000);
    expect(endsIn).toBeLessThan(23 * 3_600_000);
  });

  it('an Idempotency-Key sends once and replays the answer', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const key = newId();
    const send = () =>
      call(
        app(),
        agent,
        'POST',
        `/conversations/${conversation.id}/messages`,
        { text: 'once' },
        { 'idempotency-key': key },
      );
    const first = await send();
    const again = await send();
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().message.id).toBe(first.json().message.id);
    const count = await db()
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('conversation_id', '=', conversation.id)
      .where('direction', '=', 'outbound')
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
    expect((await messageRow(f.t, first.json().message.id)).text).toBe('once');
  });

  it('refuses bad input, unknown fields, other businesses and a missing CSRF header', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const foreign = await inboundContact(f.t, other, f.channel, 1);
    const url = `/conversations/${conversation.id}/messages`;
    for (const body of [{}, { text: '' }, { text: 'x', extra: 1 }, { text: 'x', template_id: newId() }, { text: 1 }]) {
      const res = await call(app(), agent, 'POST', url, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect((await call(app(), agent, 'POST', `/conversations/nope/messages`, { text: 'x' })).statusCode).toBe(400);
    const notMine = await call(app(), agent, 'POST', `/conversations/${foreign.conversation.id}/messages`, {
      text: 'x',
    });
    expect(notMine.statusCode).toBe(404);
    expect((await call(app(), agent, 'GET', `/conversations/${foreign.conversation.id}/compose`)).statusCode).toBe(404);
    const otherTemplate = await createTemplate(app(), other, { name: `t_${newId().slice(-8)}`, body: 'Hi' });
    expect((await call(app(), agent, 'POST', url, { template_id: otherTemplate })).statusCode).toBe(404);
    const foreignMessage = await db()
      .selectFrom('messages')
      .select('id')
      .where('conversation_id', '=', foreign.conversation.id)
      .executeTakeFirstOrThrow();
    expect((await call(app(), agent, 'POST', url, { text: 'x', reply_to: foreignMessage.id })).statusCode).toBe(404);
    const noCsrf = await call(app(), agent, 'POST', url, { text: 'x' }, { 'x-csrf-token': undefined });
    expect(noCsrf.statusCode).toBe(403);
    expect(noCsrf.json().error.code).toBe('csrf_failed');
  });
});

describe('conversation actions', () => {
  it('control, resolve, archive and unarchive write their events with the user as actor', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const base = `/conversations/${conversation.id}`;
    const steps: [string, string, unknown, Record<string, unknown>][] = [
      ['PUT', 'control', { manual: true }, { manual_control: true, manual_control_locked: false }],
      ['PUT', 'control', { manual: true, locked: true }, { manual_control: true, manual_control_locked: true }],
      ['PUT', 'control', { manual: false }, { manual_control: false, manual_control_locked: false }],
      ['POST', 'resolve', {}, {}],
      ['POST', 'archive', undefined, { closed_at: expect.any(String) }],
      ['POST', 'unarchive', {}, { closed_at: null }],
    ];
    for (const [method, name, body, expected] of steps) {
      const res = await call(app(), agent, method, `${base}/${name}`, body);
      expect(res.statusCode, `${name} ${res.body}`).toBe(200);
      expect(res.json().conversation).toMatchObject({ id: conversation.id, ...expected });
    }
    const user = { id: agentUser.id, name: agentUser.name, email: agentUser.email };
    expect(await eventsOf(conversation.id)).toMatchObject(
      [
        'manual_control_activated',
        'manual_control_locked',
        'manual_control_unlocked',
        'manual_control_released',
        'conversation_resolved',
        'conversation_archived',
        'conversation_unarchived',
      ].map((type) => ({ type, actor_type: 'human', user })),
    );
    const changes = (await changesOf(conversation.id)).map((c) => (c.data as { change: string }).change);
    expect(changes).toEqual([
      'manual_control',
      'manual_control',
      'manual_control',
      'manual_control',
      'resolution',
      'archive',
      'archive',
    ]);
    // Nothing changes, nothing is written.
    expect((await call(app(), agent, 'POST', `${base}/unarchive`, {})).statusCode).toBe(200);
    expect(await eventsOf(conversation.id)).toHaveLength(7);
  });

  it('sets a team, a user and an AI agent separately: a named field is set, null clears it, the others stay', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const url = `/conversations/${conversation.id}/assignee`;
    const support = await createTeam(f.tenant.businessId, 'Support');
    const sales = await createTeam(f.tenant.businessId, 'Sales');
    const agentId = await createAgent(app(), f.tenant);
    const steps: [Record<string, string | null>, Record<string, string | null>][] = [
      // A team and a user together, as a queue and the person working it.
      [
        { team_id: support, user_id: agentUser.id },
        { team_id: support, assigned_user_id: agentUser.id, agent_id: null },
      ],
      // The AI agent beside them.
      [{ agent_id: agentId }, { team_id: support, assigned_user_id: agentUser.id, agent_id: agentId }],
      // Another team: the user and the agent stay.
      [{ team_id: sales }, { team_id: sales, assigned_user_id: agentUser.id, agent_id: agentId }],
      // null clears the user only.
      [{ user_id: null }, { team_id: sales, assigned_user_id: null, agent_id: agentId }],
      // Nothing changes: nothing is written.
      [
        { team_id: sales, user_id: null },
        { team_id: sales, assigned_user_id: null, agent_id: agentId },
      ],
      // All three at once.
      [
        { team_id: null, user_id: agentUser.id, agent_id: null },
        { team_id: null, assigned_user_id: agentUser.id, agent_id: null },
      ],
    ];
    for (const [body, expected] of steps) {
      const res = await call(app(), agent, 'PUT', url, body);
      expect(res.statusCode, `${JSON.stringify(body)} ${res.body}`).toBe(200);
      expect(res.json().conversation, JSON.stringify(body)).toMatchObject(expected);
      const row = await db()
        .selectFrom('conversations')
        .select(['team_id', 'assigned_user_id', 'agent_id'])
        .where('id', '=', conversation.id)
        .executeTakeFirstOrThrow();
      expect(row, JSON.stringify(body)).toEqual(expected);
    }

    expect(await eventsOf(conversation.id)).toMatchObject([
      { type: 'agent_assigned', actor_type: 'human', data: { from_agent: null, to_agent: agentId } },
      { type: 'agent_removed', actor_type: 'human', data: { from_agent: agentId, to_agent: null } },
    ]);
    // One conversation_changed (assignment) per operation that changed something: the agent's
    // event stands for it when the agent changed too.
    const changes = (await changesOf(conversation.id)).map((c) => c.data as { change: string; event?: string });
    expect(changes.map((c) => c.change)).toEqual([
      'assignment',
      'assignment',
      'assignment',
      'assignment',
      'assignment',
    ]);
    expect(changes.map((c) => c.event ?? null)).toEqual([null, 'agent_assigned', null, null, 'agent_removed']);
  });

  it('the operator API sets the AI agent alone, as before', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const team = await createTeam(f.tenant.businessId, 'Kept');
    await call(app(), agent, 'PUT', `/conversations/${conversation.id}/assignee`, {
      team_id: team,
      user_id: agentUser.id,
    });
    const agentId = await createAgent(app(), f.tenant);
    const res = await app().inject({
      method: 'PUT',
      url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversation.id}/agent`,
      headers: adminHeaders,
      payload: { agent_id: agentId },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().conversation).toMatchObject({ agent_id: agentId });
    const row = await db()
      .selectFrom('conversations')
      .select(['team_id', 'assigned_user_id', 'agent_id'])
      .where('id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ team_id: team, assigned_user_id: agentUser.id, agent_id: agentId });
    expect(await eventsOf(conversation.id)).toMatchObject([
      { type: 'agent_assigned', actor_type: 'system', data: { from_agent: null, to_agent: agentId } },
    ]);
  });

  it('refuses other businesses, bad input and unknown fields; CSRF is required', async () => {
    const { conversation } = await inboundContact(f.t, f.tenant, f.channel, 1);
    const foreign = await inboundContact(f.t, other, f.channel, 1);
    const base = `/conversations/${conversation.id}`;
    const otherUser = await createUser(app(), other.businessId, {
      email: `o-${newId()}@other.test`,
      password: 'pw-other-1234',
    });
    const otherAgent = await createAgent(app(), other);
    const otherTeam = await createTeam(other.businessId, 'Theirs');
    const mine = await createTeam(f.tenant.businessId, 'Mine');
    for (const body of [
      { user_id: otherUser.id },
      { team_id: otherTeam },
      { agent_id: otherAgent },
      { user_id: newId() },
      // One unknown id refuses the whole change.
      { team_id: mine, user_id: otherUser.id },
      { team_id: otherTeam, user_id: agentUser.id },
    ]) {
      const res = await call(app(), agent, 'PUT', `${base}/assignee`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    const untouched = await db()
      .selectFrom('conversations')
      .select(['team_id', 'assigned_user_id', 'agent_id'])
      .where('id', '=', conversation.id)
      .executeTakeFirstOrThrow();
    expect(untouched).toEqual({ team_id: null, assigned_user_id: null, agent_id: null });
    for (const [method, name, body] of [
      ['PUT', 'control', { manual: true }],
      ['POST', 'resolve', {}],
      ['POST', 'archive', {}],
      ['POST', 'unarchive', {}],
      ['PUT', 'assignee', { user_id: null }],
    ] as const) {
      const res = await call(app(), agent, method, `/conversations/${foreign.conversation.id}/${name}`, body);
      expect(res.statusCode, name).toBe(404);
      const noCsrf = await call(app(), agent, method, `${base}/${name}`, body, { 'x-csrf-token': undefined });
      expect(noCsrf.statusCode, name).toBe(403);
    }
    for (const [method, name, body] of [
      ['PUT', 'control', {}],
      ['PUT', 'control', { manual: 'yes' }],
      ['PUT', 'control', { manual: true, extra: 1 }],
      ['PUT', 'control', { manual: false, locked: true }],
      ['POST', 'resolve', { reason: 'x' }],
      ['PUT', 'assignee', {}],
      ['PUT', 'assignee', { user_id: 'me' }],
      ['PUT', 'assignee', { team_id: 7 }],
      ['PUT', 'assignee', { agent_id: '' }],
      ['PUT', 'assignee', { owner: agentUser.id }],
      ['PUT', 'assignee', { user_id: agentUser.id, owner: agentUser.id }],
    ] as const) {
      const res = await call(app(), agent, method, `${base}/${name}`, body);
      expect(res.statusCode, `${name} ${JSON.stringify(body)}`).toBe(400);
    }
    expect(await eventsOf(conversation.id)).toEqual([]);
  });
});
