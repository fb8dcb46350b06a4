import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainError } from '../../../src/lib/domain-errors.ts';
import { normalisePhone } from '../../../src/lib/phone.ts';
import type { ChannelRow } from '../../../src/modules/channels/channels.repository.ts';
import { acceptSends } from '../../../src/modules/sending/sending.accept.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createChannel, inboundContact, newPhone, settled, type TestChannel } from './sending.fixtures.ts';

// Plain sends that arrive together are written in one transaction (SendingService, acceptSends):
// each still gets its own answer, a refused one writes nothing, and the others are all written.
// The first test writes a batch directly (on PGlite, requests that arrive together are still
// answered one by one: the engine runs in this thread); the second goes through the API.

let t: TestApp;
let fake: FakeGraphApi;
let tenant: Tenant;
let other: Tenant;
let channel: TestChannel;
let otherChannel: TestChannel;
let channelRow: ChannelRow;
let otherChannelRow: ChannelRow;

beforeAll(async () => {
  fake = await startFakeGraphApi();
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  channel = await createChannel(t.app, tenant, fake);
  otherChannel = await createChannel(t.app, other, fake);
  // Deliveries are written with the messages; where they go does not matter here.
  const hook = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
    headers: adminHeaders,
    payload: { event: 'message_created', url: 'http://127.0.0.1:9/hooks' },
  });
  expect(hook.statusCode).toBe(201);
  channelRow = (await t.app.services.channels.find(tenant.businessId, channel.id))!;
  otherChannelRow = (await t.app.services.channels.find(other.businessId, otherChannel.id))!;
});
afterAll(async () => {
  await t.close();
  await fake.close();
});

const db = () => t.database.db;

/** Recipients in every situation a plain send can meet, in both businesses. */
async function recipients() {
  const a = await inboundContact(t, tenant, channel, 1);
  const b = await inboundContact(t, tenant, channel, 2);
  const late = await inboundContact(t, tenant, channel, 30); // window closed
  const optedOut = await inboundContact(t, tenant, channel, 1);
  await db()
    .updateTable('contacts')
    .set({ collected_data: JSON.stringify({ opted_out: true }) })
    .where('id', '=', optedOut.contact.id)
    .execute();
  const closed = await inboundContact(t, tenant, channel, 1);
  await db()
    .updateTable('conversations')
    .set({ closed_at: new Date().toISOString() })
    .where('id', '=', closed.conversation.id)
    .execute();
  const variant = await inboundContact(t, tenant, channel, 1, `54911${randomInt(10_000_000, 99_999_999)}`);
  const theirs = await inboundContact(t, other, otherChannel, 1);
  return { a, b, late, optedOut, closed, variant, theirs, unknown: newPhone() };
}
type Recipients = Awaited<ReturnType<typeof recipients>>;

/** The sends of both tests, by name: [recipient number, business]. */
const plan = (r: Recipients) =>
  [
    ['a1', r.a.phone, 'acme'],
    ['b', r.b.phone, 'acme'],
    ['late', r.late.phone, 'acme'],
    ['a2', r.a.phone, 'acme'],
    ['optedOut', r.optedOut.phone, 'acme'],
    ['unknown', r.unknown, 'acme'],
    ['closed', r.closed.phone, 'acme'],
    ['variant', `54${r.variant.phone.slice(3)}`, 'acme'], // the 54 form of a 549 contact
    ['theirs', r.theirs.phone, 'other'],
    ['a3', r.a.phone, 'acme'],
  ] as const;

const refusals = { late: 'template_required', unknown: 'template_required', optedOut: 'blocked' } as Record<
  string,
  string
>;
const acceptedNames = ['a1', 'a2', 'a3', 'b', 'closed', 'variant', 'theirs'];

/** What every accepted send must have written, and nothing for the refused ones. */
async function expectWritten(r: Recipients, ids: Record<string, string>) {
  const everyone = [r.a, r.b, r.late, r.optedOut, r.closed, r.variant, r.theirs].map((f) => f.contact.id);
  const rows = await db()
    .selectFrom('messages')
    .selectAll()
    .where('direction', '=', 'outbound')
    .where('contact_id', 'in', everyone)
    .execute();
  expect(rows.map((row) => row.text).sort()).toEqual([...acceptedNames].sort());
  const row = (name: string) => rows.find((x) => x.id === ids[name])!;
  for (const [name, fixture] of [
    ['a1', r.a],
    ['a2', r.a],
    ['a3', r.a],
    ['b', r.b],
    ['closed', r.closed],
    ['variant', r.variant],
  ] as const) {
    expect(row(name)).toMatchObject({
      business_id: tenant.businessId,
      contact_id: fixture.contact.id,
      conversation_id: fixture.conversation.id,
      channel_id: channel.id,
      text: name,
    });
  }
  expect(row('theirs')).toMatchObject({
    business_id: other.businessId,
    contact_id: r.theirs.contact.id,
    conversation_id: r.theirs.conversation.id,
    channel_id: otherChannel.id,
  });
  expect(await db().selectFrom('contacts').select('id').where('phone_number', '=', r.unknown).execute()).toEqual([]);

  // Counters moved by the messages written; the closed conversation was reopened with its event.
  const conversation = (id: string) =>
    db().selectFrom('conversations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  expect((await conversation(r.a.conversation.id)).message_count).toBe(4);
  expect((await conversation(r.late.conversation.id)).message_count).toBe(1);
  expect(await conversation(r.closed.conversation.id)).toMatchObject({ closed_at: null, message_count: 2 });
  const events = await db()
    .selectFrom('events')
    .select(['type', 'actor_type', 'data'])
    .where('conversation_id', '=', r.closed.conversation.id)
    .execute();
  expect(events).toEqual([{ type: 'conversation_unarchived', actor_type: 'api', data: { origin: 'api' } }]);

  // One send job and (for the business with a webhook) one message_created delivery per message.
  const accepted = acceptedNames.map((name) => ids[name]);
  const jobs = await db()
    .selectFrom('outbox')
    .select('ref_id')
    .where('kind', '=', 'send')
    .where('ref_id', 'in', accepted)
    .execute();
  expect(jobs.map((j) => j.ref_id).sort()).toEqual([...accepted].sort());
  // Sends written outside the API hand their message_created events to the webhook deliveries here.
  await t.app.services.domainEvents.dispatch();
  const deliveries = await db()
    .selectFrom('webhook_deliveries')
    .select(['message_id', 'event'])
    .where('message_id', 'in', accepted)
    .execute();
  expect(deliveries.map((d) => d.message_id).sort()).toEqual(accepted.filter((id) => id !== ids.theirs).sort());
  expect(new Set(deliveries.map((d) => d.event))).toEqual(new Set(['message_created']));

  for (const id of accepted) expect((await settled(t, id)).status).toBe('SENT');
  const sentTo = (phone: string) => fake.sends().filter((req) => (req.body as { to?: string }).to === phone).length;
  expect([r.a, r.b, r.late, r.optedOut, r.closed].map((f) => sentTo(f.phone))).toEqual([3, 1, 0, 0, 1]);
  expect(sentTo(r.unknown)).toBe(0);
}

describe('plain sends written together', () => {
  it('follow the rules of a single send, in one transaction: refused ones write nothing, the others are all written', async () => {
    const r = await recipients();
    const { outcomes } = await db()
      .transaction()
      .execute((trx) =>
        acceptSends(
          trx,
          plan(r).map(([name, to, who]) => ({
            businessId: who === 'acme' ? tenant.businessId : other.businessId,
            channel: who === 'acme' ? channelRow : otherChannelRow,
            recipient: normalisePhone(to)!,
            type: 'text',
            content: { kind: 'text' as const, text: name },
            text: name,
            metadata: {},
          })),
        ),
      );
    const ids: Record<string, string> = {};
    plan(r).forEach(([name], i) => {
      const outcome = outcomes[i];
      if (name in refusals) expect('refused' in outcome && (outcome.refused as DomainError).code).toBe(refusals[name]);
      else ids[name] = (outcome as { messageId: string }).messageId;
    });
    await expectWritten(r, ids);
  });

  it('through the API, concurrent sends each get their own answer', async () => {
    const r = await recipients();
    const answers = await Promise.all(
      plan(r).map(([name, to, who]) =>
        t.app.inject({
          method: 'POST',
          url: '/external/v2/messages/send',
          headers: (who === 'acme' ? tenant : other).headers,
          payload: {
            to,
            from: 'whatsapp',
            type: 'text',
            content: { text: name },
            channel_uuid: (who === 'acme' ? channel : otherChannel).id,
          },
        }),
      ),
    );
    const ids: Record<string, string> = {};
    plan(r).forEach(([name], i) => {
      const res = answers[i];
      if (name in refusals) {
        expect(res.statusCode).toBe(400);
        expect(res.json().error.code).toBe(refusals[name]);
      } else {
        expect(res.statusCode).toBe(200);
        expect(res.json().message.status).toBe('enqueued');
        ids[name] = res.json().message.uuid;
      }
    });
    await expectWritten(r, ids);
  });
});

describe('plain sends written together, with Idempotency-Key claims', () => {
  it('store each answer with its send; a claim taken over fails only its own send', async () => {
    const a = await inboundContact(t, tenant, channel, 1);
    const b = await inboundContact(t, tenant, channel, 1);
    const idempotency = t.app.services.idempotency;
    const claimFor = async (key: string) => {
      const decision = await idempotency.begin(
        { businessId: tenant.businessId, route: 'messages.send', key },
        `hash-${key}`,
      );
      if (decision.kind !== 'run') throw new Error(`expected run, got ${decision.kind}`);
      return decision.claim;
    };
    const [kept, lost] = [await claimFor('batch-kept'), await claimFor('batch-lost')];
    // A repeat takes the second claim over while its send is still to be written.
    await db()
      .updateTable('idempotency_keys')
      .set({ created_at: new Date(Date.now() - 61_000).toISOString() })
      .where('key', '=', 'batch-lost')
      .execute();
    expect(
      (
        await idempotency.begin(
          { businessId: tenant.businessId, route: 'messages.send', key: 'batch-lost' },
          'hash-batch-lost',
        )
      ).kind,
    ).toBe('run');

    const send = (to: string, text: string, claim: typeof kept) => ({
      businessId: tenant.businessId,
      channel: channelRow,
      recipient: normalisePhone(to)!,
      type: 'text',
      content: { kind: 'text' as const, text },
      text,
      metadata: {},
      claim,
    });
    await expect(
      db()
        .transaction()
        .execute((trx) => acceptSends(trx, [send(a.phone, 'kept', kept), send(b.phone, 'lost', lost)])),
    ).rejects.toMatchObject({ kind: 'conflict' });
    // Rolled back whole: nothing written, the kept claim still running.
    const written = () =>
      db()
        .selectFrom('messages')
        .select(['id', 'text'])
        .where('direction', '=', 'outbound')
        .where('contact_id', 'in', [a.contact.id, b.contact.id])
        .execute();
    expect(await written()).toEqual([]);

    // Alone (as the batcher retries them), the kept send is written with its answer.
    const { outcomes } = await db()
      .transaction()
      .execute((trx) => acceptSends(trx, [send(a.phone, 'kept', kept)]));
    const messageId = (outcomes[0] as { messageId: string }).messageId;
    expect((await written()).map((m) => m.text)).toEqual(['kept']);
    const row = await db()
      .selectFrom('idempotency_keys')
      .select(['status_code', 'response'])
      .where('key', '=', 'batch-kept')
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status_code: 200, response: { message: { uuid: messageId, status: 'enqueued' } } });
  });
});
