import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import {
  arbitraryFor,
  fuzzOptions,
  openApiDocument,
  type GeneratorContext,
  type JsonSchema,
} from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { expectDeliveriesFor } from '../webhooks/webhook-harness.ts';
import {
  createChannel,
  createTemplate,
  inboundContact,
  newPhone,
  settled,
  type TestChannel,
} from './sending.fixtures.ts';

/**
 * What the send endpoint accepts, the provider accepts. Send requests generated from the endpoint's
 * own schema (every message type, content at its bounds, templates with too few and too many
 * values, recipients inside and outside the 24-hour window, awkward text) are answered below 500;
 * each one accepted is delivered by the worker to the Graph API on loopback, which checks the
 * request's shape as Meta does, and ends SENT: none is lost, none is sent twice, and none is refused
 * by the provider as an invalid parameter; each has its message_created delivery, whose body has the
 * contract's shape. fast-check is seeded.
 */

const FUZZ = fuzzOptions(80);

let t: TestApp;
let fake: FakeGraphApi;
let tenant: Tenant;
let channel: TestChannel;
let ctx: GeneratorContext;
let sendBody: JsonSchema;

beforeAll(async () => {
  fake = await startFakeGraphApi();
  // The webhook's target refuses connections: its deliveries are read from the table.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app);
  channel = await createChannel(t.app, tenant, fake, { pace_per_second: 1000 });
  const template = await createTemplate(t.app, tenant, {
    name: 'order_update',
    body: 'Hello {{1}}, your order {{2}} is on its way',
  });
  const user = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/users`,
    headers: adminHeaders,
    payload: { email: 'agent@example.com', name: 'Agent' },
  });
  expect(user.statusCode, user.body).toBe(201);
  const webhook = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
    headers: adminHeaders,
    payload: { event: 'message_created', url: 'http://127.0.0.1:9/hooks' },
  });
  expect(webhook.statusCode, webhook.body).toBe(201);
  const team = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/teams`,
    headers: adminHeaders,
    payload: { name: 'Sales' },
  });
  expect(team.statusCode, team.body).toBe(201);
  const open = await Promise.all([1, 2, 3].map(() => inboundContact(t, tenant, channel, 1)));
  const closed = await inboundContact(t, tenant, channel, 48);
  const { doc, resolve } = await openApiDocument(t.app);
  sendBody = doc.paths['/external/v2/messages/send'].post.requestBody!.content['application/json'].schema;
  ctx = {
    resolve,
    ids: [template, channel.id, '00000000-0000-0000-0000-000000000000'],
    wild: false,
    hints: {
      // Recipients in the 24-hour window (free text allowed), one out of it, and one never seen.
      to: fc.constantFrom(...open.map((o) => o.phone), closed.phone, newPhone(), `+${open[0].phone}`),
      from: fc.constant('whatsapp'),
      channel_uuid: fc.constant(channel.id),
      template_uuid: fc.constant(template),
      template_values: fc.array(
        fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('', ' ', '😀', '{{1}}', 'a\nb', 'x'.repeat(1024))),
        { maxLength: 3 },
      ),
      url: fc.constantFrom(
        'https://cdn.example.com/a.jpg',
        'http://files.example.org/doc.pdf?x=1',
        'https://example.com/%F0%9F%98%80.png',
      ),
      // Mostly the business's own user and team, now and then one it does not have (400).
      assigned_user: fc.constantFrom(
        'agent@example.com',
        'AGENT@Example.com',
        'agent@example.com',
        'nobody@example.com',
      ),
      team_uuid: fc.constantFrom(
        ...Array<string>(3).fill(team.json().team.id as string),
        '00000000-0000-0000-0000-000000000000',
      ),
      metadata: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 3 }),
    },
  };
});
afterAll(async () => {
  await t.close();
  await fake.close();
});

/**
 * A send request: the message type decides its content (the endpoint's rules pair them), the rest
 * comes from the endpoint's schema (assigned_user, team_uuid, fields, bot_status, metadata, ...).
 */
function sendRequest(): fc.Arbitrary<Record<string, unknown>> {
  const hints = ctx.hints!;
  const words = fc.oneof(
    fc.string({ minLength: 1, maxLength: 40 }),
    fc.constantFrom('😀', 'a\nb', '<b>hi</b>', '*bold* _it_', 'x'.repeat(4096), '\u202eabc'),
  );
  const media = (withCaption: boolean, withFilename: boolean) =>
    fc.record(
      {
        url: hints.url,
        ...(withCaption ? { caption: fc.oneof(fc.string({ maxLength: 60 }), fc.constant('c'.repeat(1024))) } : {}),
        ...(withFilename ? { filename: fc.string({ minLength: 1, maxLength: 40 }) } : {}),
      },
      { requiredKeys: ['url'] },
    );
  const byType: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
    text: fc.record({ content: fc.record({ text: words }) }),
    image: fc.record({ content: media(true, false) }),
    video: fc.record({ content: media(true, false) }),
    document: fc.record({ content: media(true, true) }),
    audio: fc.record({ content: media(false, false) }),
    sticker: fc.record({ content: media(false, false) }),
    template: fc.record(
      { content: fc.constant({}), template_uuid: hints.template_uuid, template_values: hints.template_values },
      { requiredKeys: ['content', 'template_uuid'] },
    ),
  };
  const rest = arbitraryFor(sendBody, ctx) as fc.Arbitrary<Record<string, unknown>>;
  return fc.tuple(fc.constantFrom(...Object.keys(byType)), rest).chain(([type, others]) =>
    byType[type].map((part) => {
      const { content: _c, template_uuid: _t, template_values: _v, ...options } = others;
      return { ...options, to: others.to, from: 'whatsapp', channel_uuid: channel.id, type, ...part };
    }),
  );
}

describe('generated sends', () => {
  it('are answered below 500, and each one accepted ends SENT, once, in a request the provider takes', async () => {
    const accepted: string[] = [];
    await fc.assert(
      fc.asyncProperty(sendRequest(), async (body) => {
        const res = await t.app.inject({
          method: 'POST',
          url: '/external/v2/messages/send',
          headers: tenant.headers,
          payload: body,
        });
        const label = `${res.statusCode} ${res.body.slice(0, 300)} for ${JSON.stringify(body).slice(0, 600)}`;
        expect(res.statusCode, label).toBeLessThan(500);
        if (res.statusCode < 300) accepted.push(res.json().message.uuid as string);
        else expect(res.json().error.code, label).toEqual(expect.any(String));
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through.
    expect(accepted.length).toBeGreaterThan(FUZZ.numRuns / 5);

    for (const id of accepted) {
      const row = await settled(t, id, 30_000);
      expect({ id, status: row.status, error: row.error }).toEqual({ id, status: 'SENT', error: null });
    }
    const wamids = (
      await t.database.db.selectFrom('messages').select('provider_message_id').where('id', 'in', accepted).execute()
    ).map((r) => r.provider_message_id);
    expect(new Set(wamids).size).toBe(accepted.length);
    expect(fake.sends()).toHaveLength(accepted.length);
    // Each one has its message_created delivery, with a body of the contract's shape.
    await expectDeliveriesFor(t.database.db, tenant.businessId, accepted);
  }, 300_000);
});
