import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';
import { eventually, openSse, type SseClient } from '../live/live-helpers.ts';
import { settled } from '../sending/sending.fixtures.ts';
import { createWidgetChannel, identityHash, SITE, type WidgetChannel } from './widget-helpers.ts';

/**
 * What a visitor says of themselves and sends besides text: the site's verified identity (name,
 * email, phone), the email address the widget asks for, files both ways, whether the team is
 * around, and who is typing, both ways.
 */

const SECRET = 'identity-secret-0123456789';
// The smallest PNG: a 1x1 transparent pixel.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let widget: WidgetChannel;
let othersWidget: WidgetChannel;
let base: string;
const streams: SseClient[] = [];

beforeAll(async () => {
  t = await buildTestApp({ LOG_LEVEL: 'error' });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  widget = await createWidgetChannel(t.app, tenant.businessId, {
    identity_secret: SECRET,
    away_message: 'Back tomorrow at 9.',
  });
  othersWidget = await createWidgetChannel(t.app, other.businessId);
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await t.close();
});

const sse = async (path: string, headers: Record<string, string>) => {
  const stream = await openSse(`${base}${path}`, headers);
  streams.push(stream);
  expect(stream.status, stream.body).toBe(200);
  expect(await eventually(() => stream.named('ready').length > 0)).toBe(true);
  return stream;
};

interface Attachment {
  url: string;
  filename: string | null;
  content_type: string | null;
}
interface VisitorSession {
  token: string;
  visitor_id: string;
  online: boolean;
  away_message: string | null;
  messages: { id: string; text: string; from: string; attachments: Attachment[] }[];
}

const post = (path: string, payload: Record<string, unknown>, token?: string) =>
  t.app.inject({
    method: 'POST',
    url: `/widget/v1${path}`,
    headers: { origin: SITE, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    payload,
  });

const session = async (w: WidgetChannel, body: Record<string, unknown> = {}) => {
  const res = await post(`/${w.widgetId}/sessions`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<VisitorSession>();
};

const write = async (w: WidgetChannel, token: string, text: string) => {
  const res = await post(`/${w.widgetId}/messages`, { client_id: randomUUID(), text }, token);
  expect(res.statusCode, res.body).toBe(202);
};

const upload = (
  w: WidgetChannel,
  token: string | undefined,
  bytes: Buffer,
  clientId = randomUUID(),
  type = 'image/png',
) =>
  t.app.inject({
    method: 'POST',
    url: `/widget/v1/${w.widgetId}/files?client_id=${clientId}&filename=pixel.png`,
    headers: { origin: SITE, 'content-type': type, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    payload: bytes,
  });

const contactOf = async (visitorId: string) => {
  const res = await t.app.inject({
    method: 'GET',
    url: `/external/v2/contacts?channel=web_embed&address=${visitorId}`,
    headers: tenant.headers,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{
    results: { id: string; email: string | null; phone_number: string | null; first_name: string }[];
  }>().results[0];
};

describe("a visitor's identity and address", () => {
  it("takes the site's verified name, email and phone, and refuses ones that are not", async () => {
    const identity = {
      external_id: 'cust-7',
      hash: identityHash(SECRET, 'cust-7'),
      name: 'Bea Souza',
      email: 'Bea@Example.com',
      phone: '+54 9 11 5555-0101',
    };
    const visitor = await session(widget, { identity });
    await write(widget, visitor.token, 'hello');
    expect(await contactOf(visitor.visitor_id)).toMatchObject({
      first_name: 'Bea',
      email: 'Bea@Example.com',
      phone_number: '5491155550101',
    });
    // The site now says another address: it replaces the old one (the site vouches for it).
    await session(widget, { identity: { ...identity, email: 'bea@new.example' } });
    expect((await contactOf(visitor.visitor_id)).email).toBe('bea@new.example');
    // What the visitor types never replaces it.
    const typed = await post(`/${widget.widgetId}/profile`, { email: 'someone@else.example' }, visitor.token);
    expect(typed.json()).toEqual({ saved: false });
    expect((await contactOf(visitor.visitor_id)).email).toBe('bea@new.example');

    for (const bad of [{ email: 'not an address' }, { phone: '12' }, { phone: 'call me' }]) {
      const res = await post(`/${widget.widgetId}/sessions`, { identity: { ...identity, ...bad } });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });

  it('fills an empty email with what the visitor types, after their first message only', async () => {
    const visitor = await session(widget);
    const early = await post(`/${widget.widgetId}/profile`, { email: 'eve@example.com' }, visitor.token);
    expect(early.statusCode).toBe(409);
    await write(widget, visitor.token, 'anyone there?');
    expect((await post(`/${widget.widgetId}/profile`, { email: 'nope' }, visitor.token)).statusCode).toBe(400);
    expect((await post(`/${widget.widgetId}/profile`, {}, visitor.token)).statusCode).toBe(400);
    expect((await post(`/${widget.widgetId}/profile`, { email: 'a@b.co', x: 1 }, visitor.token)).statusCode).toBe(400);
    const saved = await post(`/${widget.widgetId}/profile`, { email: 'eve@example.com' }, visitor.token);
    expect(saved.json()).toEqual({ saved: true });
    expect((await contactOf(visitor.visitor_id)).email).toBe('eve@example.com');
    // A second, different address does not replace the first.
    const again = await post(`/${widget.widgetId}/profile`, { email: 'eve@other.example' }, visitor.token);
    expect(again.json()).toEqual({ saved: false });
    expect((await contactOf(visitor.visitor_id)).email).toBe('eve@example.com');
    // Another business's widget, or no token: refused.
    expect((await post(`/${othersWidget.widgetId}/profile`, { email: 'x@y.co' }, visitor.token)).statusCode).toBe(401);
    expect((await post(`/${widget.widgetId}/profile`, { email: 'x@y.co' })).statusCode).toBe(401);
  });
});

describe('files', () => {
  it("stores a visitor's image before its message, once per client id, and serves it back", async () => {
    const visitor = await session(widget);
    const clientId = randomUUID();
    const res = await upload(widget, visitor.token, PNG, clientId, 'application/octet-stream');
    expect(res.statusCode, res.body).toBe(202);
    // A retry under the same client id, even with other bytes, stores nothing more and replaces nothing.
    expect((await upload(widget, visitor.token, Buffer.concat([PNG, Buffer.from([0])]), clientId)).statusCode).toBe(
      202,
    );
    const { messages } = await session(widget, { token: visitor.token });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ from: 'visitor' });
    const [file] = messages[0].attachments;
    expect(file).toMatchObject({ filename: 'pixel.png', content_type: 'image/png' });
    const served = await t.app.inject({ method: 'GET', url: new URL(file.url).pathname + new URL(file.url).search });
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(PNG)).toBe(true);
    // The API sees an image message with its file.
    const row = await t.database.db
      .selectFrom('messages')
      .select(['type', 'direction'])
      .where('id', '=', messages[0].id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ type: 'image', direction: 'inbound' });
  });

  it('refuses what is no allowed file, too large a file, and a visitor of another widget, storing nothing', async () => {
    const visitor = await session(widget);
    const script = await upload(
      widget,
      visitor.token,
      Buffer.from('<script>alert(1)</script>'),
      undefined,
      'image/png',
    );
    expect(script.statusCode).toBe(415);
    expect(script.json().error.code).toBe('unsupported_file_type');
    expect((await upload(widget, visitor.token, Buffer.alloc(0))).statusCode).toBe(400);
    const large = Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024)]);
    const tooLarge = await upload(widget, visitor.token, large);
    expect(tooLarge.statusCode).toBe(413);
    expect(typeof tooLarge.json().error.message).toBe('string');
    expect((await upload(othersWidget, visitor.token, PNG)).statusCode).toBe(401);
    expect((await upload(widget, undefined, PNG)).statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'POST',
      url: `/widget/v1/${widget.widgetId}/files?client_id=nope`,
      headers: { origin: SITE, 'content-type': 'image/png', authorization: `Bearer ${visitor.token}` },
      payload: PNG,
    });
    expect(bad.statusCode).toBe(400);
    expect((await session(widget, { token: visitor.token })).messages).toEqual([]);
  });

  it("shows the business's files in the widget", async () => {
    const visitor = await session(widget);
    await write(widget, visitor.token, 'send me the menu');
    const sent = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: {
        from: 'web_embed',
        channel_uuid: widget.id,
        to: visitor.visitor_id,
        type: 'document',
        content: { url: 'https://cdn.example.com/menu.pdf', filename: 'menu.pdf' },
      },
    });
    expect(sent.statusCode, sent.body).toBe(200);
    expect((await settled(t, sent.json().message.uuid as string)).status).toBe('SENT');
    const { messages } = await session(widget, { token: visitor.token });
    expect(messages.at(-1)).toMatchObject({
      from: 'business',
      attachments: [{ url: 'https://cdn.example.com/menu.pdf' }],
    });
  });
});

describe('whether the team is around', () => {
  it("says offline, with the channel's away message, until someone uses the dashboard", async () => {
    const away = await session(widget);
    expect(away).toMatchObject({ online: false, away_message: 'Back tomorrow at 9.' });
    await createUser(t.app, tenant.businessId, { email: 'agent@widget.test', password: 'agent password 1234' });
    await signIn(t.app, 'agent@widget.test', 'agent password 1234');
    expect((await session(widget)).online).toBe(true);
    // Another business's team does not count.
    expect((await session(othersWidget)).online).toBe(false);
  });
});

describe('who is typing', () => {
  let agent: Browser;
  let othersAgent: Browser;
  beforeAll(async () => {
    await createUser(t.app, tenant.businessId, {
      email: 'typist@widget.test',
      name: 'Tess',
      password: 'typist pass 1234',
    });
    agent = await signIn(t.app, 'typist@widget.test', 'typist pass 1234');
    await createUser(t.app, other.businessId, { email: 'other@widget.test', password: 'other pass 12345' });
    othersAgent = await signIn(t.app, 'other@widget.test', 'other pass 12345');
  });

  it("shows the visitor's typing in the business's dashboards, and the team's in the visitor's widget", async () => {
    const visitor = await session(widget);
    // Before the first message there is no conversation: said to no one.
    expect((await post(`/${widget.widgetId}/typing`, { typing: true }, visitor.token)).statusCode).toBe(204);
    await write(widget, visitor.token, 'a question');
    const dashboard = await sse('/dashboard/api/live', { cookie: `session=${agent.token}` });
    const othersDashboard = await sse('/dashboard/api/live', { cookie: `session=${othersAgent.token}` });
    const widgetStream = await sse(`/widget/v1/${widget.widgetId}/stream`, {
      origin: SITE,
      authorization: `Bearer ${visitor.token}`,
    });

    expect((await post(`/${widget.widgetId}/typing`, { typing: true }, visitor.token)).statusCode).toBe(204);
    expect(await eventually(() => dashboard.named('typing').length > 0)).toBe(true);
    const said = JSON.parse(dashboard.named('typing')[0].data);
    expect(said).toMatchObject({ by: 'contact', typing: true });
    expect(said.conversation_id).toEqual(expect.any(String));
    expect(dashboard.named('typing')[0].id).toBeUndefined();

    const answer = await call(t.app, agent, 'POST', `/conversations/${said.conversation_id}/typing`, { typing: true });
    expect(answer.statusCode, answer.body).toBe(204);
    expect(await eventually(() => widgetStream.named('typing').length > 0)).toBe(true);
    expect(JSON.parse(widgetStream.named('typing')[0].data)).toEqual({ typing: true, name: 'Tess' });

    // Another business's team hears nothing, and cannot say it types in this conversation.
    const foreign = await call(t.app, othersAgent, 'POST', `/conversations/${said.conversation_id}/typing`, {
      typing: true,
    });
    expect(foreign.statusCode).toBe(404);
    expect(othersDashboard.named('typing')).toEqual([]);
    // Another visitor of the same widget hears nothing of this conversation.
    const stranger = await session(widget);
    await write(widget, stranger.token, 'me too');
    const strangerStream = await sse(`/widget/v1/${widget.widgetId}/stream`, {
      origin: SITE,
      authorization: `Bearer ${stranger.token}`,
    });
    await call(t.app, agent, 'POST', `/conversations/${said.conversation_id}/typing`, { typing: false });
    expect(await eventually(() => widgetStream.named('typing').length > 1)).toBe(true);
    expect(strangerStream.named('typing')).toEqual([]);

    for (const bad of [{}, { typing: 'yes' }, { typing: true, x: 1 }])
      expect((await post(`/${widget.widgetId}/typing`, bad, visitor.token)).statusCode).toBe(400);
    expect((await post(`/${widget.widgetId}/typing`, { typing: true })).statusCode).toBe(401);
    expect((await call(t.app, agent, 'POST', `/conversations/${said.conversation_id}/typing`, {})).statusCode).toBe(
      400,
    );
  });
});
