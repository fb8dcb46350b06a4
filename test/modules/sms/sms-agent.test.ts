import { afterAll, beforeAll, expect, it } from 'vitest';
import { incomingSms, startFakeTwilioApi, twilioWebhook, type FakeTwilioApi } from '../../helpers/fake-twilio-api.ts';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { createAgent } from '../ai/ai-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';
import { createSmsChannel, newNumber, SMS_WEBHOOK, type SmsChannel } from './sms-helpers.ts';

let t: TestApp;
let twilio: FakeTwilioApi;
let llm: FakeLlmApi;
let tenant: Tenant;
let channel: SmsChannel;

beforeAll(async () => {
  twilio = await startFakeTwilioApi();
  llm = await startFakeLlmApi();
  t = await buildTestApp({
    ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
    LLM_URL: llm.url,
    LLM_API_KEY: 'sk-test-key',
    LLM_TIMEOUT_SECONDS: '5',
  });
  tenant = await createTenant(t.app);
  const agent = await createAgent(t.app, tenant.businessId, { activation_rules: { debounce_seconds: 0.2 } });
  channel = await createSmsChannel(t.app, tenant.businessId, twilio);
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
  await twilio.close();
  await llm.close();
});

it("starts the channel's AI agent on an inbound SMS, which replies by SMS to the sender", async () => {
  const from = newNumber();
  const params = incomingSms({ accountSid: twilio.accountSid, from, to: channel.number, body: 'Where is my order?' });
  const res = await t.app.inject({
    method: 'POST',
    url: SMS_WEBHOOK,
    ...twilioWebhook(`${PUBLIC_URL}${SMS_WEBHOOK}`, params, twilio.authToken),
  });
  expect(res.statusCode).toBe(200);
  await until(() => twilio.sends().some((s) => s.form.To === from));
  const [reply] = twilio.sends().filter((s) => s.form.To === from);
  expect(reply.form).toMatchObject({ From: channel.number, Body: 'Reply to: Where is my order?' });
  const row = await t.database.db
    .selectFrom('messages')
    .selectAll()
    .where('business_id', '=', tenant.businessId)
    .where('direction', '=', 'outbound')
    .executeTakeFirstOrThrow();
  expect(row).toMatchObject({ channel: 'sms', channel_id: channel.id, sender_type: 'ai_agent' });
});
