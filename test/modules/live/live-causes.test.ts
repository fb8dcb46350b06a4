import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import type { LiveEvent } from '../../../src/modules/live/live.events.ts';
import { inboundMessage, startFakeGraphApi, statusReceipt, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { notificationFor, postSigned } from '../inbound/whatsapp-helpers.ts';
import { createChannel, inboundContact, messageRow, type TestChannel } from '../sending/sending.fixtures.ts';
import { eventually, recordingSink } from './live-helpers.ts';

// Every change an open dashboard shows reaches its stream at once: the operation that commits it
// hands its domain events over before it answers (the send job, right after its commit). The
// dispatcher's poll is off in this app, so what arrives came through that hand-over.

let fake: FakeGraphApi;
let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let stream: ReturnType<typeof recordingSink>;

beforeAll(async () => {
  fake = await startFakeGraphApi();
  // The stream's session is made up: the app's check of sessions stays off (live-http.test.ts tests it).
  t = await buildTestApp(
    { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' },
    { workers: false, live: { sessionCheckMs: 3_600_000 } },
  );
  tenant = await createTenant(t.app);
  channel = await createChannel(t.app, tenant, fake);
  t.app.worker.start();
  stream = recordingSink();
  const connection = t.app.services.live.open(
    { sessionId: newId(), userId: newId(), businessId: tenant.businessId },
    stream.sink,
  );
  if (typeof connection === 'string') throw new Error(connection);
  await connection.start(undefined);
});
afterAll(async () => {
  await t.close();
  await fake.close();
});

const api = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url: `/external/v2${url}`, headers: tenant.headers, payload });

/**
 * Runs `cause` and answers the events it brought to the stream: those it committed are handed over
 * before its answer, so they arrive within a second of it (on the embedded engine, before it).
 */
async function arrivals(
  cause: () => Promise<{ statusCode: number; body: string }>,
  until: (e: LiveEvent[]) => boolean,
  withinMs = 1000,
) {
  const from = stream.events().length;
  const res = await cause();
  const answered = performance.now();
  expect(res.statusCode, res.body).toBeLessThan(300);
  expect(await eventually(() => until(stream.events().slice(from)), withinMs)).toBe(true);
  expect(stream.frames.at(-1)!.at - answered).toBeLessThan(withinMs);
  return stream.events().slice(from);
}

describe('what reaches an open dashboard without the poll', () => {
  it('an inbound message, a receipt, and a send with its assignment and status from the send job', async () => {
    const phone = '14155550101';
    const inbound = await arrivals(
      () =>
        postSigned(
          t.app,
          notificationFor(
            { ...channel, businessId: tenant.businessId, appSecret: 'app-secret', verifyToken: '' },
            {
              messages: [inboundMessage(phone, 'text', { body: 'hello' })],
            },
          ),
          'app-secret',
        ),
      (e) => e.some((x) => x.type === 'message_created'),
    );
    expect(inbound.map((e) => e.type)).toEqual(['contact_changed', 'message_created']);

    const { phone: to } = await inboundContact(t, tenant, channel, 1);
    const user = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/users`,
      headers: adminHeaders,
      payload: { email: 'ana@acme.test', name: 'Ana' },
    });
    expect(user.statusCode, user.body).toBe(201);
    let messageId = '';
    const sent = await arrivals(
      async () => {
        const res = await api('POST', '/messages/send', {
          to,
          from: 'whatsapp',
          type: 'text',
          content: { text: 'on our way' },
          channel_uuid: channel.id,
          assigned_user: 'ana@acme.test',
        });
        messageId = res.json().message?.uuid;
        return res;
      },
      (e) => e.some((x) => x.type === 'message_status_changed'),
      // The send job commits SENT after the answer, once the fake Graph API has answered it.
      5000,
    );
    expect(sent.map((e) => [e.type, e.data?.change ?? e.data?.status])).toEqual([
      ['conversation_changed', 'assignment'],
      ['message_created', 'PENDING'],
      ['message_status_changed', 'SENT'],
    ]);
    expect(sent.every((e) => e.type === 'conversation_changed' || e.subject_id === messageId)).toBe(true);

    const providerId = (await messageRow(t, messageId)).provider_message_id!;
    const receipt = await arrivals(
      () =>
        postSigned(
          t.app,
          notificationFor(
            { ...channel, businessId: tenant.businessId, appSecret: 'app-secret', verifyToken: '' },
            {
              statuses: [statusReceipt(providerId, 'read', to)],
            },
          ),
          'app-secret',
        ),
      (e) => e.length > 0,
    );
    expect(receipt).toMatchObject([
      { type: 'message_status_changed', subject_id: messageId, data: { status: 'READ' } },
    ]);
  });

  it('contact creation, update, merge, deletion and the closing of its conversations', async () => {
    const create = (email: string) => api('POST', '/contacts', { email, first_name: 'Rita' });
    let id = '';
    const created = await arrivals(
      async () => {
        const res = await create('rita@acme.test');
        id = res.json().contact.id;
        return res;
      },
      (e) => e.length > 0,
    );
    expect(created).toMatchObject([{ type: 'contact_changed', subject_id: id, data: { change: 'created' } }]);
    expect(
      await arrivals(
        () => api('PATCH', `/contacts/${id}`, { name: 'Rosa Lopez' }),
        (e) => e.length > 0,
      ),
    ).toMatchObject([{ type: 'contact_changed', subject_id: id, data: { change: 'updated' } }]);

    const { contact, conversation } = await inboundContact(t, tenant, channel, 2);
    expect(
      await arrivals(
        () => api('POST', `/contacts/${contact.id}/conversation/close`),
        (e) => e.length > 0,
      ),
    ).toMatchObject([{ type: 'conversation_changed', subject_id: conversation.id, data: { change: 'archive' } }]);

    let otherId = '';
    await arrivals(
      async () => {
        const res = await create('rita.two@acme.test');
        otherId = res.json().contact.id;
        return res;
      },
      (e) => e.length > 0,
    );
    expect(
      await arrivals(
        () => api('POST', '/contacts/merge', { survivor_id: id, loser_id: otherId }),
        (e) => e.some((x) => x.data?.change === 'merged'),
      ),
    ).toMatchObject([{ type: 'contact_changed', data: { change: 'merged' } }, { type: 'contact_changed' }]);
    expect(
      await arrivals(
        () => api('DELETE', `/contacts/${id}`),
        (e) => e.length > 0,
      ),
    ).toMatchObject([{ type: 'contact_changed', subject_id: id, data: { change: 'deleted' } }]);
  });
});
