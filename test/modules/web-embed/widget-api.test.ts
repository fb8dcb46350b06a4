import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteEndedCounters } from '../../../src/http/rate-limit.store.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { settled } from '../sending/sending.fixtures.ts';
import { createWidgetChannel, identityHash, SITE, type WidgetChannel } from './widget-helpers.ts';

const SECRET = 'identity-secret-0123456789';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let widget: WidgetChannel;
let othersWidget: WidgetChannel;
let base: string;

beforeAll(async () => {
  t = await buildTestApp({ LOG_LEVEL: 'error' });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  widget = await createWidgetChannel(t.app, tenant.businessId, { identity_secret: SECRET });
  othersWidget = await createWidgetChannel(t.app, other.businessId);
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => t.close());

interface VisitorSession {
  token: string;
  visitor_id: string;
  verified: boolean;
  messages: { id: string; text: string; from: string; client_id: string | null }[];
}

const post = (path: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: `/widget/v1${path}`, headers: { origin: SITE, ...headers }, payload });

const session = async (w: WidgetChannel, body: Record<string, unknown> = {}) => {
  const res = await post(`/${w.widgetId}/sessions`, body);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['access-control-allow-origin']).toBe(SITE);
  return res.json<VisitorSession>();
};

const write = (w: WidgetChannel, token: string, text: string, clientId = randomUUID()) =>
  post(`/${w.widgetId}/messages`, { client_id: clientId, text }, { authorization: `Bearer ${token}` });

const messageRow = (id: string) =>
  t.database.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** The frames of a visitor's stream, read over real HTTP as the widget reads them. */
async function openStream(w: WidgetChannel, token: string) {
  const abort = new AbortController();
  const res = await fetch(`${base}/widget/v1/${w.widgetId}/stream`, {
    headers: { origin: SITE, authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const next = async (event: string): Promise<unknown> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (name === event && data) return JSON.parse(data);
        continue;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended');
      buffer += value;
    }
  };
  await next('ready');
  return { next, close: () => abort.abort() };
}

describe('visitor sessions', () => {
  it('refuses an origin the channel does not allow, a missing origin, and an unknown widget', async () => {
    const wrong = await post(`/${widget.widgetId}/sessions`, {}, { origin: 'https://evil.example' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.headers['access-control-allow-origin']).toBeUndefined();
    const none = await t.app.inject({ method: 'POST', url: `/widget/v1/${widget.widgetId}/sessions`, payload: {} });
    expect(none.statusCode).toBe(403);
    expect((await post('/w_unknown_widget/sessions', {})).statusCode).toBe(404);
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: `/widget/v1/${widget.widgetId}/messages`,
      headers: { origin: SITE, 'access-control-request-method': 'POST' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toContain('authorization');
  });

  it('refuses bad input with 400 and unknown fields', async () => {
    const { token } = await session(widget);
    expect(
      (await post(`/${widget.widgetId}/messages`, { text: 'hi' }, { authorization: `Bearer ${token}` })).statusCode,
    ).toBe(400);
    const extra = await post(
      `/${widget.widgetId}/messages`,
      { client_id: randomUUID(), text: 'hi', admin: true },
      { authorization: `Bearer ${token}` },
    );
    expect(extra.statusCode).toBe(400);
    expect(extra.json().error.code).toBe('validation_error');
    expect((await write(widget, token, '')).statusCode).toBe(400);
    expect((await post(`/${widget.widgetId}/sessions`, { identity: { external_id: 'x' } })).statusCode).toBe(400);
  });

  it('stores what a visitor writes as an inbound message, once per client id, and keeps the session across reloads', async () => {
    const first = await session(widget);
    expect(first.verified).toBe(false);
    expect(first.messages).toEqual([]);
    const clientId = randomUUID();
    expect((await write(widget, first.token, 'Do you ship to Lisbon?', clientId)).statusCode).toBe(202);
    expect((await write(widget, first.token, 'Do you ship to Lisbon?', clientId)).statusCode).toBe(202);
    const again = await session(widget, { token: first.token });
    expect(again.visitor_id).toBe(first.visitor_id);
    expect(again.messages).toMatchObject([{ text: 'Do you ship to Lisbon?', from: 'visitor', client_id: clientId }]);
    const row = await messageRow(again.messages[0].id);
    expect(row).toMatchObject({
      direction: 'inbound',
      status: 'RECEIVED',
      channel: 'web_embed',
      channel_id: widget.id,
    });
    const created = await t.database.db
      .selectFrom('domain_events')
      .select('type')
      .where('subject_id', '=', row.id)
      .execute();
    expect(created.map((e) => e.type)).toContain('message_created');
    // The public export names the channel.
    const since = new Date(Date.now() - 3600_000).toISOString();
    const exported = await t.app.inject({
      method: 'GET',
      url: `/external/v2/messages?channel=web_embed&since=${since}`,
      headers: tenant.headers,
    });
    expect(exported.statusCode, exported.body).toBe(200);
    expect(JSON.stringify(exported.json())).toContain(row.id);
  });

  it('hands a reply sent with POST /messages/send to the open widget, which marks it delivered then read', async () => {
    const visitor = await session(widget);
    expect((await write(widget, visitor.token, 'hello')).statusCode).toBe(202);
    const stream = await openStream(widget, visitor.token);
    try {
      const sent = await t.app.inject({
        method: 'POST',
        url: '/external/v2/messages/send',
        headers: tenant.headers,
        payload: {
          from: 'web_embed',
          channel_uuid: widget.id,
          to: visitor.visitor_id,
          type: 'text',
          content: { text: 'Yes, we do!' },
        },
      });
      expect(sent.statusCode, sent.body).toBe(200);
      const id = sent.json().message.uuid as string;
      expect((await settled(t, id)).status).toBe('SENT');
      let frame = (await stream.next('messages')) as { messages: { id: string; from: string; text: string }[] };
      while (!frame.messages.some((m) => m.id === id)) frame = (await stream.next('messages')) as typeof frame;
      expect(frame.messages.find((m) => m.id === id)).toMatchObject({ from: 'business', text: 'Yes, we do!' });
      const ack = (status: string, ids = [id], token = visitor.token, w = widget) =>
        post(`/${w.widgetId}/receipts`, { message_ids: ids, status }, { authorization: `Bearer ${token}` });
      expect((await ack('delivered')).json()).toEqual({ moved: 1 });
      expect((await messageRow(id)).status).toBe('DELIVERED');
      expect((await ack('read')).json()).toEqual({ moved: 1 });
      expect((await messageRow(id)).status).toBe('READ');
      // Another visitor names the message: nothing moves.
      const stranger = await session(widget);
      expect((await ack('read', [id], stranger.token)).json()).toEqual({ moved: 0 });
    } finally {
      stream.close();
    }
  });
});

describe('identity validation and tenancy', () => {
  it('gives a signed-in customer one visitor on every device, and refuses a wrong HMAC', async () => {
    const identity = { external_id: 'cust-42', name: 'Ana Lima', hash: identityHash(SECRET, 'cust-42') };
    const phone = await session(widget, { identity });
    const laptop = await session(widget, { identity });
    expect(phone.verified).toBe(true);
    expect(laptop.visitor_id).toBe(phone.visitor_id);
    expect((await write(widget, phone.token, 'from my phone')).statusCode).toBe(202);
    const later = await session(widget, { identity });
    expect(later.messages.map((m) => m.text)).toEqual(['from my phone']);
    const contact = await t.database.db
      .selectFrom('contacts')
      .select(['first_name', 'last_name'])
      .where('id', '=', (await messageRow(later.messages[0].id)).contact_id)
      .executeTakeFirstOrThrow();
    expect(contact).toEqual({ first_name: 'Ana', last_name: 'Lima' });

    const wrong = await post(`/${widget.widgetId}/sessions`, {
      identity: { external_id: 'cust-42', hash: identityHash('another-secret-0123456789', 'cust-42') },
    });
    expect(wrong.statusCode).toBe(401);
    const noSecret = await post(`/${othersWidget.widgetId}/sessions`, { identity }, { origin: SITE });
    expect(noSecret.statusCode).toBe(400);
  });

  it("refuses a token on another business's widget, and a token that is no token", async () => {
    const mine = await session(widget);
    expect((await write(othersWidget, mine.token, 'hi')).statusCode).toBe(401);
    expect((await write(widget, `${mine.token}x`, 'hi')).statusCode).toBe(401);
    expect((await write(widget, tenant.key, 'hi')).statusCode).toBe(401);
    // A token of another channel starts a new visitor there.
    const there = await session(othersWidget, { token: mine.token });
    expect(there.visitor_id).not.toBe(mine.visitor_id);
    expect(there.messages).toEqual([]);
  });
});

describe('abuse', () => {
  it("bounds a visitor's open streams (its tabs); those left open end when the server closes", async () => {
    const visitor = await session(widget);
    // Left open: afterAll's close must end them (components.ts), or it would wait for them.
    for (let i = 0; i < 5; i++) await openStream(widget, visitor.token);
    const sixth = await fetch(`${base}/widget/v1/${widget.widgetId}/stream`, {
      headers: { origin: SITE, authorization: `Bearer ${visitor.token}` },
    });
    expect(sixth.status).toBe(429);
    expect(((await sixth.json()) as { error: { code: string } }).error.code).toBe('too_many_streams');
  });

  it('limits the sessions one address opens per minute', async () => {
    let last = 0;
    for (let i = 0; i < 31 && last !== 429; i++) last = (await post(`/${widget.widgetId}/sessions`, {})).statusCode;
    expect(last).toBe(429);
    // The counters of windows that ended are deleted (hourly); a fresh one is kept.
    expect(await deleteEndedCounters(t.database.db, 60_000)).toBe(0);
    expect(await deleteEndedCounters(t.database.db, 0, -120_000)).toBeGreaterThan(0);
    expect((await post(`/${widget.widgetId}/sessions`, {})).statusCode).toBe(200);
  });
});
