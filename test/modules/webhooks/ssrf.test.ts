import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { isPublicAddress } from '../../../src/net/ip-policy.ts';
import { checkTargetUrl, guardedAgent, SsrfError } from '../../../src/net/ssrf-guard.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import {
  buildWebhookApp,
  logOf,
  Receiver,
  sharedDatabase,
  storeMessage,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

const refusedUrls = [
  'http://127.0.0.1/',
  'http://127.1/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0177.0.0.1/',
  'http://0x7f.0.0.1/',
  'http://10.0.0.1/',
  'http://172.16.0.1/',
  'http://172.31.255.254/',
  'http://192.168.1.1/',
  'http://169.254.169.254/latest/meta-data/',
  'http://100.64.0.1/',
  'http://0.0.0.0/',
  'http://0/',
  'http://[::1]/',
  'http://[::]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[::ffff:10.0.0.1]/',
  'http://[::127.0.0.1]/',
  'http://[64:ff9b::7f00:1]/',
  'http://[fe80::1]/',
  'http://[fc00::1]/',
  'http://[fd12:3456::1]/',
  'http://[ff02::1]/',
  'http://224.0.0.1/',
  'http://255.255.255.255/',
  'http://198.18.0.1/',
  'http://192.0.2.10/',
  'http://203.0.113.5/',
  'http://[2001:db8::1]/',
  'http://localhost:8080/',
  'https://localhost/',
];

describe('address policy', () => {
  it('refuses every non-public address form, IPv4 and IPv6', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '198.18.0.1',
      '192.0.2.1',
      '198.51.100.1',
      '203.0.113.1',
      '240.0.0.1',
      '::1',
      '::',
      '::ffff:127.0.0.1',
      '::ffff:a00:1',
      '::127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fec0::1',
      'ff02::1',
      '2001:db8::1',
      '2002:7f00:1::',
      '2001::1',
      '127.1',
      '2130706433',
      'localhost',
      '',
    ]) {
      expect(isPublicAddress(ip), ip).toBe(false);
    }
  });

  it('accepts global unicast addresses, also inside mapped and NAT64 forms', () => {
    for (const ip of [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '2606:4700:4700::1111',
      '[2a00:1450:4001::1]',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
    ]) {
      expect(isPublicAddress(ip), ip).toBe(true);
    }
  });

  it('checks URLs after WHATWG normalisation of decimal, octal and hex encodings', async () => {
    for (const url of refusedUrls)
      await expect(checkTargetUrl(url, { allowPrivate: false }), url).rejects.toBeInstanceOf(SsrfError);
    await expect(checkTargetUrl('http://8.8.8.8/hook', { allowPrivate: false })).resolves.toBeInstanceOf(URL);
    await expect(checkTargetUrl('http://127.0.0.1/', { allowPrivate: true })).resolves.toBeInstanceOf(URL);
    await expect(checkTargetUrl('file:///etc/passwd', { allowPrivate: true })).rejects.toBeInstanceOf(SsrfError);
  });

  it('refuses a literal address before connecting, and a name whose address is not public', async () => {
    const receiver = await Receiver.start();
    const agent = guardedAgent({ allowPrivate: false });
    try {
      await expect(request(receiver.url, { dispatcher: agent })).rejects.toThrow(
        /127\.0\.0\.1 is not a public address/,
      );
      await expect(request(receiver.url.replace('127.0.0.1', 'localhost'), { dispatcher: agent })).rejects.toThrow(
        /not a public address|not public/,
      );
      expect(receiver.calls).toHaveLength(0);
      const open = guardedAgent({ allowPrivate: true });
      expect((await request(receiver.url, { dispatcher: open })).statusCode).toBe(200);
      await open.close();
    } finally {
      await agent.close();
      await receiver.close();
    }
  });
});

describe('webhook targets without ALLOW_PRIVATE_WEBHOOK_TARGETS', () => {
  let shared: SharedDatabase;
  let strict: WebhookTestApp;
  let tenant: Tenant;

  beforeAll(async () => {
    shared = await sharedDatabase();
    strict = await buildWebhookApp(shared, { env: { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'false' } });
    tenant = await createTenant(strict.app);
  });
  afterAll(async () => {
    await strict.close();
    await shared.drop();
  });

  it(`refuses ${refusedUrls.length} private addresses and encodings at creation and on edit`, async () => {
    expect(refusedUrls.length).toBeGreaterThanOrEqual(15);
    for (const url of refusedUrls) {
      const res = await strict.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
        headers: adminHeaders,
        payload: { event: 'message_created', url },
      });
      expect(res.statusCode, url).toBe(400);
      // The answer names the setting that permits such a target.
      expect(res.json().error.message, url).toMatch(
        /^url refused: .*not a public address \(a service started with ALLOW_PRIVATE_WEBHOOK_TARGETS=true accepts/,
      );
    }
    // A refusal the setting would not lift does not point at it.
    const credentials = await strict.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
      headers: adminHeaders,
      payload: { event: 'message_created', url: 'https://user:secret@8.8.8.8/hook' },
    });
    expect(credentials.statusCode).toBe(400);
    expect(credentials.json().error.message).toMatch(/^url refused: credentials in the URL/);
    expect(credentials.json().error.message).not.toContain('ALLOW_PRIVATE_WEBHOOK_TARGETS');
    const ok = await strict.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
      headers: adminHeaders,
      payload: { event: 'message_created', url: 'https://8.8.8.8/hook' },
    });
    expect(ok.statusCode).toBe(201);
    const edit = await strict.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${tenant.businessId}/webhooks/${ok.json().webhook.id}`,
      headers: adminHeaders,
      payload: { url: 'http://[::ffff:169.254.169.254]/' },
    });
    expect(edit.statusCode).toBe(400);
  });

  it('checks the target again at every attempt: a loopback URL stored earlier is never called', async () => {
    const receiver = await Receiver.start();
    // Registered by a process that allowed private targets, delivered by one that does not.
    const lenient = await buildWebhookApp(shared, { workers: false });
    try {
      const created = await lenient.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
        headers: adminHeaders,
        payload: { event: 'message_created', url: receiver.url },
      });
      expect(created.statusCode).toBe(201);
      await storeMessage(strict, tenant.businessId);
      const [entry] = await logOf(strict.app, tenant.businessId, created.json().webhook.id, 1);
      expect(entry).toMatchObject({ ok: false, status_code: null, attempt: 1 });
      expect(String(entry.error)).toMatch(
        /^refused target: 127\.0\.0\.1 is not a public address \(.*ALLOW_PRIVATE_WEBHOOK_TARGETS=true/,
      );
      expect(receiver.calls).toHaveLength(0);
    } finally {
      await lenient.close();
      await receiver.close();
    }
  });
});
