import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  messageEvent,
  messagingNotification,
  metaId,
  signedBody,
  startFakeMetaMessagingApi,
  type FakeMetaMessagingApi,
} from '../../helpers/fake-meta-messaging-api.ts';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createAgent } from '../ai/ai-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';
import { createMetaChannel, type MetaChannel } from './meta-helpers.ts';

let t: TestApp;
let fake: FakeMetaMessagingApi;
let llm: FakeLlmApi;
let tenant: Tenant;
let channel: MetaChannel;

beforeAll(async () => {
  fake = await startFakeMetaMessagingApi();
  llm = await startFakeLlmApi();
  t = await buildTestApp({
    ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
    LLM_URL: llm.url,
    LLM_API_KEY: 'sk-test-key',
    LLM_TIMEOUT_SECONDS: '5',
  });
  tenant = await createTenant(t.app);
  const agent = await createAgent(t.app, tenant.businessId, { activation_rules: { debounce_seconds: 0.2 } });
  channel = await createMetaChannel(t, tenant.businessId, fake, 'messenger');
  const patched = await t.app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
    headers: adminHeaders,
    payload: { agent_id: agent.id },
  });
  expect(patched.statusCode, patched.body).toBe(200);
});
afterAll(async () => {
  await t.close();
  await fake.close();
  await llm.close();
});

const post = (events: unknown[], field = 'messaging') =>
  t.app.inject({
    method: 'POST',
    url: '/channels/messenger/webhook',
    ...signedBody(messagingNotification('page', channel.account, events, field), channel.appSecret),
  });

it("starts the channel's AI agent on a Messenger message, which replies through the Send API; not on standby", async () => {
  const person = metaId();
  expect((await post([messageEvent(person, channel.account, { text: 'Where is my order?' })])).statusCode).toBe(200);
  await until(() => fake.sends().length > 0);
  const [reply] = fake.sends();
  expect(reply.body).toMatchObject({
    recipient: { id: person },
    messaging_type: 'RESPONSE',
    message: { text: 'Reply to: Where is my order?' },
  });
  const row = await t.database.db
    .selectFrom('messages')
    .selectAll()
    .where('business_id', '=', tenant.businessId)
    .where('direction', '=', 'outbound')
    .executeTakeFirstOrThrow();
  expect(row).toMatchObject({ channel: 'messenger', channel_id: channel.id, sender_type: 'ai_agent' });

  // While another app holds the conversation (standby), the message is stored and nobody answers it.
  const other = metaId();
  const calls = llm.requests.length;
  const standby = messageEvent(other, channel.account, { text: 'Hello?' });
  expect((await post([standby], 'standby')).statusCode).toBe(200);
  const stored = await t.database.db
    .selectFrom('messages')
    .select('conversation_id')
    .where('provider_message_id', '=', standby.message.mid)
    .executeTakeFirstOrThrow();
  const runs = await t.database.db
    .selectFrom('outbox')
    .select('id')
    .where('business_id', '=', tenant.businessId)
    .where('kind', '=', 'ai_run')
    .where('ref_id', '=', stored.conversation_id)
    .execute();
  expect(runs).toHaveLength(0);
  expect(llm.requests.length).toBe(calls);
});
