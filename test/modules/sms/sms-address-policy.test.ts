import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeTwilioApi, type FakeTwilioApi } from '../../helpers/fake-twilio-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { newNumber } from './sms-helpers.ts';

// The service as it runs by default: no private provider targets. Twilio calls carry the account's
// credentials, so they obey the outbound address policy like every provider's.
let t: TestApp;
let twilio: FakeTwilioApi;
let tenant: Tenant;

beforeAll(async () => {
  twilio = await startFakeTwilioApi();
  t = await buildTestApp();
  tenant = await createTenant(t.app);
});
afterAll(async () => {
  await t.close();
  await twilio.close();
});

const create = (apiBaseUrl: string) =>
  t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'sms',
      identifier: newNumber(),
      provider: {
        kind: 'twilio',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        from_number: newNumber(),
        api_base_url: apiBaseUrl,
      },
    },
  });

it('refuses a private api_base_url, literal or by a name that resolves to one, and one with credentials', async () => {
  expect((await create(twilio.baseUrl)).statusCode).toBe(400);
  const named = await create(`http://localhost:${new URL(twilio.baseUrl).port}`);
  expect(named.statusCode).toBe(400);
  expect(named.json().error.message).toContain('not a public address');
  expect((await create('http://user:pass@api.twilio.example')).statusCode).toBe(400);
  expect(twilio.requests).toHaveLength(0);
});
