import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { messageEvent, messagingNotification, metaId } from '../../helpers/fake-meta-messaging-api.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';
import { settled } from '../sending/sending.fixtures.ts';
import { withMetaChannels, type MetaChannel, type MetaFixture } from './meta-helpers.ts';

let f: MetaFixture;
let browser: Browser;
beforeAll(async () => {
  f = await withMetaChannels();
  await createUser(f.t.app, f.tenant.businessId, { email: 'agent@acme.test', password: 'a long password 1' });
  browser = await signIn(f.t.app, 'agent@acme.test', 'a long password 1');
});
afterAll(() => f.close());
beforeEach(() => {
  f.fake.requests.length = 0;
});

const send = (channel: MetaChannel, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  f.t.app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers: { ...f.tenant.headers, ...headers },
    payload: { from: channel.kind, channel_uuid: channel.id, type: 'text', ...payload },
  });

/** A person who wrote to the channel `hoursAgo` hours ago; answers their id and the conversation's. */
async function wrote(channel: MetaChannel, hoursAgo = 0) {
  const person = metaId();
  const event = messageEvent(person, channel.account, { text: 'hello' }, Date.now() - hoursAgo * 3_600_000);
  const object = channel.kind === 'messenger' ? 'page' : 'instagram';
  const res = await f.post(channel, messagingNotification(object, channel.account, [event]));
  expect(res.statusCode, res.body).toBe(200);
  const row = await f.t.database.db
    .selectFrom('messages')
    .select('conversation_id')
    .where('provider_message_id', '=', event.message.mid)
    .executeTakeFirstOrThrow();
  return { person, conversationId: row.conversation_id };
}

describe('Messenger and Instagram sends', () => {
  it("sends a text through the Send API within the window, with metadata, Idempotency-Key and the page's path", async () => {
    const { person } = await wrote(f.messenger);
    const key = `key-${metaId()}`;
    const res = await send(
      f.messenger,
      { to: person, content: { text: 'Your order shipped' }, metadata: { order: '42' } },
      { 'idempotency-key': key },
    );
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().message.uuid as string;
    const again = await send(
      f.messenger,
      { to: person, content: { text: 'Your order shipped' }, metadata: { order: '42' } },
      { 'idempotency-key': key },
    );
    expect(again.json().message.uuid).toBe(id);
    const row = await settled(f.t, id);
    expect(row.status).toBe('SENT');
    const calls = f.fake.sends();
    expect(calls).toHaveLength(1);
    expect(calls[0].path).toBe(`/v21.0/${f.messenger.account}/messages`);
    expect(calls[0].headers.authorization).toBe(`Bearer ${f.fake.accessToken}`);
    expect(calls[0].body).toEqual({
      recipient: { id: person },
      messaging_type: 'RESPONSE',
      message: { text: 'Your order shipped', metadata: id },
    });
    expect(row.provider_message_id).toMatch(/^m_/);
    expect(row.channel).toBe('messenger');
  });

  it('sends media by URL as an attachment; Instagram on its account, without metadata', async () => {
    const { person } = await wrote(f.instagram);
    const res = await send(f.instagram, {
      to: person,
      type: 'document',
      content: { url: 'https://cdn.example.com/menu.pdf', filename: 'menu.pdf' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect((await settled(f.t, res.json().message.uuid as string)).status).toBe('SENT');
    const [call] = f.fake.sends();
    expect(call.path).toBe(`/v21.0/${f.instagram.account}/messages`);
    expect(call.body).toEqual({
      recipient: { id: person },
      messaging_type: 'RESPONSE',
      message: {
        attachment: { type: 'file', payload: { url: 'https://cdn.example.com/menu.pdf', is_reusable: false } },
      },
    });
  });

  it('refuses free-form outside the 24-hour window with 400 window_closed, and a recipient that is not a PSID', async () => {
    const { person } = await wrote(f.messenger, 30);
    const late = await send(f.messenger, { to: person, content: { text: 'too late' } });
    expect(late.statusCode).toBe(400);
    expect(late.json().error.code).toBe('window_closed');
    const stranger = await send(f.messenger, { to: metaId(), content: { text: 'cold' } });
    expect(stranger.statusCode).toBe(400);
    expect(stranger.json().error.code).toBe('window_closed');
    const notAnId = await send(f.messenger, { to: 'someone@example.com', content: { text: 'x' } });
    expect(notAnId.statusCode).toBe(400);
    expect(f.fake.sends()).toHaveLength(0);
  });

  it("lets a person in the dashboard answer for 7 days with Messenger's HUMAN_AGENT tag, not Instagram", async () => {
    const { person, conversationId } = await wrote(f.messenger, 30);
    const compose = await call(f.t.app, browser, 'GET', `/conversations/${conversationId}/compose`);
    expect(compose.json()).toMatchObject({ window_open: true });
    const reply = await call(f.t.app, browser, 'POST', `/conversations/${conversationId}/messages`, {
      text: 'Sorry for the wait',
    });
    expect(reply.statusCode, reply.body).toBe(202);
    expect((await settled(f.t, reply.json().message.id as string)).status).toBe('SENT');
    const [sent] = f.fake.sends();
    expect(sent.body).toMatchObject({
      recipient: { id: person },
      messaging_type: 'MESSAGE_TAG',
      tag: 'HUMAN_AGENT',
      message: { text: 'Sorry for the wait' },
    });
    // Past 7 days, nobody may.
    const old = await wrote(f.messenger, 24 * 8);
    const tooLate = await call(f.t.app, browser, 'POST', `/conversations/${old.conversationId}/messages`, {
      text: 'hello?',
    });
    expect(tooLate.statusCode).toBe(400);
    expect(tooLate.json().error.code).toBe('window_closed');
    // Instagram has no such window for people.
    const ig = await wrote(f.instagram, 30);
    const igReply = await call(f.t.app, browser, 'POST', `/conversations/${ig.conversationId}/messages`, {
      text: 'hello?',
    });
    expect(igReply.statusCode).toBe(400);
  });

  it("marks the channel as needing credentials on Meta's code 190, until the operator PATCHes a new token", async () => {
    const { person } = await wrote(f.messenger);
    f.fake.failNextSends(1, {
      status: 401,
      code: 190,
      subcode: 463,
      message: 'Error validating access token: Session has expired',
    });
    const res = await send(f.messenger, { to: person, content: { text: 'hi' } });
    const row = await settled(f.t, res.json().message.uuid as string);
    expect(row.status).toBe('ERROR');
    expect(row.error).toContain('190');
    const channelUrl = `/admin/v1/businesses/${f.tenant.businessId}/channels/${f.messenger.id}`;
    const shown = await f.t.app.inject({ method: 'GET', url: channelUrl, headers: adminHeaders });
    expect(shown.json().channel).toMatchObject({ needs_credentials: true });
    expect(shown.body).not.toContain(f.fake.accessToken);
    expect(shown.body).not.toContain(f.messenger.appSecret);
    const patched = await f.t.app.inject({
      method: 'PATCH',
      url: channelUrl,
      headers: adminHeaders,
      payload: { provider: { access_token: f.fake.accessToken } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().channel).toMatchObject({ needs_credentials: false });
    expect(patched.body).not.toContain(f.fake.accessToken);
  });

  it('answers 400 to unknown provider fields and a bad page id when a channel is created', async () => {
    const create = (provider: Record<string, unknown>) =>
      f.t.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${f.tenant.businessId}/channels`,
        headers: adminHeaders,
        payload: { type: 'messenger', identifier: '123', provider },
      });
    const base = { kind: 'messenger', page_id: metaId(), access_token: 'EAAx', app_secret: 's', verify_token: 'v' };
    expect((await create({ ...base, extra: 1 })).statusCode).toBe(400);
    expect((await create({ ...base, page_id: 'not digits' })).statusCode).toBe(400);
    expect((await create({ ...base, kind: 'instagram' })).statusCode).toBe(400);
  });
});
