import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { PUBLIC_URL } from '../../helpers/test-app.ts';
import { call, refused, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

let f: SettingsFixture;
beforeAll(async () => {
  f = await settingsFixture();
});
afterAll(() => f.t.close());

const whatsapp = (overrides: Record<string, unknown> = {}) => ({
  type: 'whatsapp',
  identifier: '+15550001111',
  provider: { kind: 'whatsapp_cloud', phone_number_id: '1001', access_token: 'EAAtoken123', app_secret: 'shh-secret' },
  ...overrides,
});

describe('channel settings', () => {
  it('lists the kinds with the fields of their forms, read from the registry', async () => {
    const res = await call(f.t.app, f.admin, 'GET', '/channel-kinds');
    expect(res.statusCode).toBe(200);
    const [kind] = res.json().kinds;
    expect(kind).toMatchObject({
      kind: 'whatsapp_cloud',
      title: 'WhatsApp (Meta Cloud API)',
      channel_types: ['whatsapp'],
      webhook_url: `${PUBLIC_URL}/channels/whatsapp_cloud/webhook`,
    });
    const fields = Object.fromEntries(kind.fields.map((x: { name: string }) => [x.name, x]));
    expect(Object.keys(fields)).toEqual([
      'phone_number_id',
      'access_token',
      'app_secret',
      'verify_token',
      'api_base_url',
    ]);
    expect(fields.access_token).toMatchObject({ required: true, secret: true, type: 'text' });
    expect(fields.verify_token).toMatchObject({ required: false, secret: true });
    expect(fields.api_base_url).toMatchObject({ required: false, secret: false, type: 'url' });
    expect(fields.phone_number_id).toMatchObject({ required: true, secret: false, pattern: '^[0-9]{1,32}$' });
  });

  it("lists a nested object's fields by their path, and connects an email channel with them", async () => {
    const res = await call(f.t.app, f.admin, 'GET', '/channel-kinds');
    const kinds = res.json().kinds as {
      kind: string;
      address_kind: string;
      webhook_url: string | null;
      fields: { name: string; type: string; required: boolean; secret: boolean }[];
    }[];
    const kind = kinds.find((k) => k.kind === 'email')!;
    expect(kind).toMatchObject({ address_kind: 'email', webhook_url: null });
    const fields = Object.fromEntries(kind.fields.map((x) => [x.name, x]));
    expect(fields['smtp.host']).toMatchObject({ type: 'text', required: true, secret: false });
    expect(fields['smtp.port']).toMatchObject({ type: 'integer', required: true });
    expect(fields['imap.secure']).toMatchObject({ type: 'boolean', required: true });
    expect(fields['imap.password']).toMatchObject({ required: true, secret: true });
    expect(fields['imap.mailbox']).toMatchObject({ required: false });
    const server = { host: 'mail.example.com', secure: true, user: 'hello@shop.example', password: 'app-password' };
    const connected = await call(f.t.app, f.owner, 'POST', '/channels', {
      type: 'email',
      identifier: 'hello@shop.example',
      provider: {
        kind: 'email',
        address: 'hello@shop.example',
        smtp: { ...server, port: 465 },
        imap: { ...server, port: 993 },
      },
    });
    expect(connected.statusCode, connected.body).toBe(201);
    expect(connected.json().channel.secrets).toEqual({ 'smtp.password': '••••••••', 'imap.password': '••••••••' });
    expect(connected.body).not.toContain('app-password');
    const removed = await call(f.t.app, f.owner, 'DELETE', `/channels/${connected.json().channel.id}`);
    expect(removed.statusCode).toBe(204);
  });

  it('connects a number and answers the webhook URL and a verify token that passes Meta’s handshake', async () => {
    const res = await call(f.t.app, f.owner, 'POST', '/channels', whatsapp());
    expect(res.statusCode, res.body).toBe(201);
    const { channel, webhook } = res.json();
    expect(webhook.url).toBe(`${PUBLIC_URL}/channels/whatsapp_cloud/webhook`);
    expect(webhook.verify_token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(channel).toMatchObject({
      type: 'whatsapp',
      identifier: '15550001111',
      pace_per_second: 80,
      provider: { kind: 'whatsapp_cloud', account: '1001' },
      webhook_url: webhook.url,
      secrets: { access_token: '••••••••', app_secret: '••••••••', verify_token: '••••••••' },
    });
    expect(res.body).not.toContain('EAAtoken123');
    expect(res.body).not.toContain('shh-secret');

    const handshake = await f.t.app.inject({
      method: 'GET',
      url: '/channels/whatsapp_cloud/webhook',
      query: { 'hub.mode': 'subscribe', 'hub.verify_token': webhook.verify_token, 'hub.challenge': 'ping' },
    });
    expect(handshake.statusCode).toBe(200);
    expect(handshake.body).toBe('ping');

    const listed = await call(f.t.app, f.admin, 'GET', '/channels');
    expect(listed.statusCode).toBe(200);
    expect(listed.json().channels).toEqual([channel]);
    expect(listed.body).not.toContain(webhook.verify_token);
    expect(listed.body).not.toContain('EAAtoken123');
  });

  it('keeps a verify token given in the form', async () => {
    const res = await call(
      f.t.app,
      f.admin,
      'POST',
      '/channels',
      whatsapp({
        identifier: '15550002222',
        provider: { ...whatsapp().provider, phone_number_id: '1002', verify_token: 'chosen-token' },
      }),
    );
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().webhook.verify_token).toBe('chosen-token');
  });

  it('edits the pace and the name, and nothing else', async () => {
    const [channel] = (await call(f.t.app, f.owner, 'GET', '/channels')).json().channels;
    const res = await call(f.t.app, f.admin, 'PATCH', `/channels/${channel.id}`, {
      pace_per_second: 20,
      name: 'Sales',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().channel).toMatchObject({ id: channel.id, pace_per_second: 20, name: 'Sales' });
    await refused(
      call(f.t.app, f.admin, 'PATCH', `/channels/${channel.id}`, { provider: { app_secret: 'x' } }),
      400,
      'validation_error',
    );
    await refused(
      call(f.t.app, f.admin, 'PATCH', `/channels/${channel.id}`, { pace_per_second: 0 }),
      400,
      'validation_error',
    );
    await refused(call(f.t.app, f.admin, 'PATCH', `/channels/${channel.id}`, {}), 400, 'validation_error');
    await refused(call(f.t.app, f.admin, 'PATCH', `/channels/${newId()}`, { pace_per_second: 5 }), 404, 'not_found');
    await refused(
      call(f.t.app, f.otherOwner, 'PATCH', `/channels/${channel.id}`, { pace_per_second: 5 }),
      404,
      'not_found',
    );
    expect((await call(f.t.app, f.otherOwner, 'GET', '/channels')).json().channels).toEqual([]);
  });

  it('refuses bad forms with 400, unknown fields included, and a number taken with 409', async () => {
    for (const body of [
      whatsapp({ identifier: 'abc' }),
      whatsapp({ provider: { ...whatsapp().provider, phone_number_id: 'x1' } }),
      whatsapp({ provider: { ...whatsapp().provider, extra: 1 } }),
      whatsapp({ provider: { kind: 'whatsapp_cloud', phone_number_id: '1' } }),
      whatsapp({ colour: 'red' }),
      whatsapp({ provider: { ...whatsapp().provider, api_base_url: 'http://127.0.0.1/graph' } }),
      {},
    ]) {
      const res = await call(f.t.app, f.admin, 'POST', '/channels', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    await refused(call(f.t.app, f.admin, 'POST', '/channels', whatsapp()), 409, 'conflict');
    await refused(
      call(f.t.app, f.otherOwner, 'POST', '/channels', whatsapp({ identifier: '15550009999' })),
      409,
      'conflict',
    );
  });

  it('answers 403 to an agent on every channel route', async () => {
    const id = (await call(f.t.app, f.owner, 'GET', '/channels')).json().channels[0].id;
    await refused(call(f.t.app, f.agent, 'GET', '/channel-kinds'), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'GET', '/channels'), 403, 'forbidden');
    await refused(
      call(f.t.app, f.agent, 'POST', '/channels', whatsapp({ identifier: '15550003333' })),
      403,
      'forbidden',
    );
    await refused(call(f.t.app, f.agent, 'PATCH', `/channels/${id}`, { pace_per_second: 3 }), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'DELETE', `/channels/${id}`), 403, 'forbidden');
  });

  it("deletes a channel as the operator API does; another business's id is a 404", async () => {
    const created = await call(f.t.app, f.owner, 'POST', '/channels', {
      ...whatsapp({ identifier: '15550004444' }),
      provider: { ...whatsapp().provider, phone_number_id: '1004' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json().channel;

    await refused(call(f.t.app, f.otherOwner, 'DELETE', `/channels/${id}`), 404, 'not_found');
    await refused(call(f.t.app, f.admin, 'DELETE', '/channels/nope'), 400, 'validation_error');
    await refused(call(f.t.app, f.admin, 'DELETE', `/channels/${newId()}`), 404, 'not_found');
    await refused(
      call(f.t.app, f.admin, 'DELETE', `/channels/${id}`, undefined, { 'x-csrf-token': 'wrong' }),
      403,
      'csrf_failed',
    );
    const listed = async () =>
      (await call(f.t.app, f.admin, 'GET', '/channels')).json().channels.map((c: { id: string }) => c.id);
    expect(await listed()).toContain(id);

    const res = await call(f.t.app, f.admin, 'DELETE', `/channels/${id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(await listed()).not.toContain(id);
    const operator = await f.t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${f.businessId}/channels/${id}`,
      headers: adminHeaders,
    });
    expect(operator.statusCode).toBe(404);
    await refused(call(f.t.app, f.admin, 'DELETE', `/channels/${id}`), 404, 'not_found');
    // Its number can be connected again.
    const again = await call(f.t.app, f.owner, 'POST', '/channels', {
      ...whatsapp({ identifier: '15550004444' }),
      provider: { ...whatsapp().provider, phone_number_id: '1004' },
    });
    expect(again.statusCode, again.body).toBe(201);
  });
});
