import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePhone } from '../../../src/lib/phone.ts';
import { fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, type Tenant } from '../../helpers/tenants.ts';
import { exportEverything } from '../exports/export-helpers.ts';
import { expectDeliveriesFor } from '../webhooks/webhook-harness.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { withWhatsAppChannel, type TestChannel, type WhatsAppFixture } from './whatsapp-helpers.ts';

/**
 * What Meta signs is stored or refused, never a 500, and what was stored can be read back through
 * the API. Notifications shaped as Meta's (messages of every type, receipts, contact profiles) carry
 * generated values: awkward text, timestamps far in the past and future, ids that repeat, numbers
 * where text goes, fields of the wrong type. Each is signed with the channel's app secret, so it
 * passes the signature check and reaches the parser and the database. Every message stored has its
 * message_created delivery, whose body has the contract's shape. fast-check is seeded.
 */

const FUZZ = fuzzOptions(100);

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let post: WhatsAppFixture['post'];

beforeAll(async () => {
  // The read-back walks an export window per month of generated timestamps. The webhook's target is
  // never called (no workers): its deliveries, written with each message, are read from the table.
  ({ t, tenant, channel, post } = await withWhatsAppChannel({
    env: { RATE_LIMIT_EXPORTS_PER_MINUTE: '100000', ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' },
    workers: false,
  }));
  const webhook = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
    headers: adminHeaders,
    payload: { event: 'message_created', url: 'http://127.0.0.1:9/hooks' },
  });
  expect(webhook.statusCode, webhook.body).toBe(201);
});
afterAll(() => t.close());

const awkward = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '😀',
  '\u202e',
  '<b>',
  "'; drop table messages; --",
  'x'.repeat(5000),
  '0',
  '-1',
  'null',
);
const text = fc.oneof(fc.string({ maxLength: 30 }), awkward);
/** Any JSON at all, where a field of another type might come. */
const anything = fc.jsonValue({ maxDepth: 2 });
/** A field's value: of its type mostly, now and then anything. */
const field = <T>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary }, { weight: 1, arbitrary: anything });

// Mostly what Meta sends, so that most messages are stored; the rest is what it should not send.
const phone = field(
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('5491122334455', '5215512345678', '15551234567', '34612345678') },
    { weight: 2, arbitrary: fc.stringMatching(/^\d{1,20}$/) },
    { weight: 1, arbitrary: awkward },
  ),
);
const wamid = field(
  fc.oneof(
    { weight: 6, arbitrary: fc.stringMatching(/^[A-Za-z0-9_=-]{8,60}$/).map((s) => `wamid.${s}`) },
    { weight: 2, arbitrary: fc.constantFrom('wamid.REPEATED', 'wamid.OTHER') },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
    { weight: 1, arbitrary: awkward },
  ),
);
const seconds = field(
  fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 4_102_444_800 }).map(String) }, // 1970 to 2100
    {
      weight: 1,
      arbitrary: fc.constantFrom('-62135596800', '253402300800', '99999999999999999999', '1e9', '1.5', 'now', ''),
    },
    { weight: 1, arbitrary: fc.integer({ min: 1_600_000_000, max: 1_900_000_000 }) },
  ),
);
const media = fc.record(
  {
    id: field(fc.stringMatching(/^\d{1,16}$/)),
    mime_type: field(fc.constantFrom('image/jpeg', 'audio/ogg; codecs=opus', 'application/pdf', 'x/y', '')),
    sha256: field(text),
    caption: field(text),
    filename: field(text),
    voice: field(fc.boolean()),
  },
  { requiredKeys: [] },
);
const contents: Record<string, fc.Arbitrary<unknown>> = {
  text: fc.record({ body: field(text), preview_url: field(fc.boolean()) }, { requiredKeys: [] }),
  image: media,
  audio: media,
  video: media,
  document: media,
  sticker: fc.record(
    { id: field(fc.stringMatching(/^\d{1,16}$/)), mime_type: field(text), animated: field(fc.boolean()) },
    { requiredKeys: [] },
  ),
  location: fc.record(
    {
      latitude: field(fc.double()),
      longitude: field(fc.double()),
      name: field(text),
      address: field(text),
      url: field(text),
    },
    { requiredKeys: [] },
  ),
  contacts: fc.array(
    fc.record(
      {
        name: field(fc.record({ formatted_name: field(text), first_name: field(text) }, { requiredKeys: [] })),
        phones: field(
          fc.array(fc.record({ phone: field(text), wa_id: phone, type: field(text) }, { requiredKeys: [] }), {
            maxLength: 3,
          }),
        ),
      },
      { requiredKeys: [] },
    ),
    { maxLength: 3 },
  ),
  interactive: fc.oneof(
    fc.record(
      {
        type: fc.constant('button_reply'),
        button_reply: field(fc.record({ id: field(text), title: field(text) }, { requiredKeys: [] })),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      {
        type: fc.constant('list_reply'),
        list_reply: field(
          fc.record({ id: field(text), title: field(text), description: field(text) }, { requiredKeys: [] }),
        ),
      },
      { requiredKeys: [] },
    ),
    fc.record({ type: field(text) }, { requiredKeys: [] }),
  ),
  button: fc.record({ text: field(text), payload: field(text) }, { requiredKeys: [] }),
  reaction: fc.record({ message_id: wamid, emoji: field(text) }, { requiredKeys: [] }),
  order: fc.record(
    { catalog_id: field(text), product_items: field(fc.array(anything, { maxLength: 3 })) },
    { requiredKeys: [] },
  ),
  system: fc.record({ body: field(text), type: field(text), wa_id: phone }, { requiredKeys: [] }),
  unsupported: fc.constant(undefined),
};
const providerError = fc.record(
  {
    code: field(fc.integer()),
    title: field(text),
    message: field(text),
    error_data: field(fc.record({ details: field(text) }, { requiredKeys: [] })),
  },
  { requiredKeys: [] },
);

const message = fc
  .tuple(fc.constantFrom(...Object.keys(contents), 'never_seen_type'), phone, wamid, seconds)
  .chain(([type, from, id, timestamp]) =>
    fc.record(
      {
        from: fc.constant(from),
        id: fc.constant(id),
        timestamp: fc.constant(timestamp),
        type: fc.oneof({ weight: 9, arbitrary: fc.constant(type) }, { weight: 1, arbitrary: anything }),
        [type]: contents[type] ?? anything,
        context: fc.record({ from: phone, id: wamid, forwarded: field(fc.boolean()) }, { requiredKeys: [] }),
        errors: fc.array(providerError, { maxLength: 2 }),
        referral: fc.record({ source_url: field(text), headline: field(text) }, { requiredKeys: [] }),
      },
      { requiredKeys: ['from', 'id', 'timestamp', 'type'] },
    ),
  );

const receipt = fc.record(
  {
    id: wamid,
    status: field(fc.oneof(fc.constantFrom('sent', 'delivered', 'read', 'failed', 'deleted', 'warning'), text)),
    timestamp: seconds,
    recipient_id: phone,
    errors: fc.array(providerError, { maxLength: 2 }),
    biz_opaque_callback_data: field(fc.oneof(fc.uuid(), text)),
    conversation: fc.record({ id: field(text), origin: field(fc.record({ type: field(text) })) }, { requiredKeys: [] }),
  },
  { requiredKeys: ['id', 'status', 'timestamp', 'recipient_id'] },
);

const notification = () =>
  fc.record({
    object: field(fc.constant('whatsapp_business_account')),
    entry: fc.array(
      fc.record({
        id: field(fc.constant('102290129340398')),
        changes: fc.array(
          fc.record({
            field: field(fc.constantFrom('messages', 'account_update')),
            value: field(
              fc.record(
                {
                  messaging_product: fc.constant('whatsapp'),
                  metadata: field(
                    fc.record({
                      display_phone_number: fc.constant(channel.identifier),
                      phone_number_id: fc.constant(channel.phoneNumberId),
                    }),
                  ),
                  contacts: fc.array(
                    fc.record(
                      { profile: field(fc.record({ name: field(text) }, { requiredKeys: [] })), wa_id: phone },
                      { requiredKeys: [] },
                    ),
                    { maxLength: 3 },
                  ),
                  messages: fc.array(message, { minLength: 1, maxLength: 4 }),
                  statuses: fc.array(receipt, { maxLength: 4 }),
                  errors: fc.array(providerError, { maxLength: 2 }),
                },
                { requiredKeys: ['messaging_product', 'metadata'] },
              ),
            ),
          }),
          { minLength: 1, maxLength: 2 },
        ),
      }),
      { minLength: 1, maxLength: 2 },
    ),
  });

describe('signed notifications with generated content', () => {
  it('are stored or refused with 400, never a 5xx, and what was stored reads back through the API', async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(notification(), async (body) => {
        const res = await post(body);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const label = `${res.statusCode} ${res.body.slice(0, 300)} for ${JSON.stringify(body).slice(0, 1500)}`;
        expect([200, 400], label).toContain(res.statusCode);
        if (res.statusCode === 400) expect(res.json().error.code, label).toBe('validation_error');
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through: most notifications are stored.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(FUZZ.numRuns / 2);

    const contacts = await t.database.db
      .selectFrom('contacts')
      .select(['id', 'phone_number'])
      .where('business_id', '=', tenant.businessId)
      .execute();
    expect(contacts.length).toBeGreaterThan(0);
    const get = (url: string) => t.app.inject({ method: 'GET', url: `/external/v2${url}`, headers: tenant.headers });
    for (const contact of contacts) {
      for (const url of [
        `/contacts/${contact.id}`,
        `/contacts/${contact.id}/messages?limit=200`,
        `/contacts/${contact.id}/timeline`,
      ]) {
        const res = await get(url);
        expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).toBe(200);
      }
      if (contact.phone_number) {
        // A sender whose address is not a phone number keeps it, but cannot be looked up by it.
        const res = await get(`/conversations?phone=${encodeURIComponent(contact.phone_number)}&message_limit=200`);
        const expected = normalisePhone(contact.phone_number) ? [200, 409] : [400];
        expect(expected, `conversations of ${contact.phone_number}: ${res.body.slice(0, 300)}`).toContain(
          res.statusCode,
        );
      }
    }
    // Every stored message has its message_created delivery, with a body of the contract's shape.
    const messages = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', tenant.businessId)
      .execute();
    await expectDeliveriesFor(
      t.database.db,
      tenant.businessId,
      messages.map((m) => m.id),
    );
    // Every stored message and event is exported, page by page, whatever its timestamp.
    for (const table of ['messages', 'events'] as const) {
      const { stored, exported } = await exportEverything(t, tenant, table);
      expect(exported.map((r) => r.id).sort(), table).toEqual(stored.sort());
    }
  }, 600_000);
});
