import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createAgent } from '../ai/ai-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';
import { createWidgetChannel, SITE, type WidgetChannel } from './widget-helpers.ts';

let t: TestApp;
let llm: FakeLlmApi;
let tenant: Tenant;
let widget: WidgetChannel;

beforeAll(async () => {
  llm = await startFakeLlmApi();
  t = await buildTestApp({ LLM_URL: llm.url, LLM_API_KEY: 'sk-test-key', LLM_TIMEOUT_SECONDS: '5' });
  tenant = await createTenant(t.app);
  const agent = await createAgent(t.app, tenant.businessId, { activation_rules: { debounce_seconds: 0.2 } });
  widget = await createWidgetChannel(t.app, tenant.businessId);
  const patched = await t.app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${tenant.businessId}/channels/${widget.id}`,
    headers: adminHeaders,
    payload: { agent_id: agent.id },
  });
  expect(patched.statusCode, patched.body).toBe(200);
});
afterAll(async () => {
  await t.close();
  await llm.close();
});

it("starts the channel's AI agent on a visitor's message; its answer is in the visitor's history", async () => {
  const post = (path: string, payload: object, token?: string) =>
    t.app.inject({
      method: 'POST',
      url: `/widget/v1/${widget.widgetId}${path}`,
      headers: { origin: SITE, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      payload,
    });
  const { token } = (await post('/sessions', {})).json<{ token: string }>();
  const written = await post(
    '/messages',
    { client_id: crypto.randomUUID(), text: 'Is the store open on Sunday?' },
    token,
  );
  expect(written.statusCode).toBe(202);
  const history = async () =>
    (await post('/sessions', { token })).json<{ messages: { from: string; text: string }[] }>().messages;
  await until(async () => (await history()).some((m) => m.from === 'business'));
  expect(await history()).toEqual([
    expect.objectContaining({ from: 'visitor', text: 'Is the store open on Sunday?' }),
    expect.objectContaining({ from: 'business', text: 'Reply to: Is the store open on Sunday?' }),
  ]);
  const reply = await t.database.db
    .selectFrom('messages')
    .select(['channel', 'sender_type', 'status'])
    .where('business_id', '=', tenant.businessId)
    .where('direction', '=', 'outbound')
    .executeTakeFirstOrThrow();
  expect(reply).toMatchObject({ channel: 'web_embed', sender_type: 'ai_agent', status: 'SENT' });
});
