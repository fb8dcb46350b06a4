import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildApp } from '../../src/app.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

const anyPublicRoute = '/external/v2/contacts?email=a@b.co';

describe('API key authentication', () => {
  it('issues keys in the mk_live_ format, shown once and stored hashed', async () => {
    expect(tenant.key).toMatch(/^mk_live_[0-9A-Za-z]{43}$/);
    const stored = await t.database.db.selectFrom('api_keys').selectAll().execute();
    expect(stored).toHaveLength(1);
    expect(stored[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(tenant.key);
    const listed = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant.businessId}/api-keys`,
      headers: adminHeaders,
    });
    expect(listed.body).not.toContain(tenant.key);
    expect(listed.json().api_keys[0].prefix).toBe(tenant.key.slice(0, 12));
    const unknown = await t.app.inject({
      method: 'GET',
      url: '/admin/v1/businesses/0190a6f0-0000-7000-8000-000000000000/api-keys',
      headers: adminHeaders,
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
  });

  it.each([
    ['missing', {}],
    ['empty', { 'x-api-key': '' }],
    ['malformed', { 'x-api-key': 'not-a-key' }],
    ['unknown', { 'x-api-key': `mk_live_${'A'.repeat(43)}` }],
  ])('answers 401 unauthorized for a %s key', async (_name, headers) => {
    const res = await t.app.inject({ method: 'GET', url: anyPublicRoute, headers });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
    expect(typeof res.json().error.message).toBe('string');
  });

  it('stops accepting a revoked key at once', async () => {
    const other = await createTenant(t.app, 'Revoking');
    const before = await t.app.inject({ method: 'GET', url: anyPublicRoute, headers: other.headers });
    expect(before.statusCode).not.toBe(401);
    const keys = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${other.businessId}/api-keys`,
      headers: adminHeaders,
    });
    const keyId = keys.json().api_keys[0].id;
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${other.businessId}/api-keys/${keyId}`,
      headers: adminHeaders,
    });
    expect(revoked.json()).toEqual({ success: true });
    const after = await t.app.inject({ method: 'GET', url: anyPublicRoute, headers: other.headers });
    expect(after.statusCode).toBe(401);
    const again = await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${other.businessId}/api-keys/${keyId}`,
      headers: adminHeaders,
    });
    expect(again.statusCode).toBe(404);
  });

  // Only PostgreSQL serves several processes; the embedded engine has one, tested just above.
  it.runIf(engine === 'postgres')('stops accepting a key revoked by another server process', async () => {
    const other = await createTenant(t.app, 'Two processes');
    const second = await buildApp(t.config, { database: t.database, logger: false, workers: false });
    await second.ready();
    try {
      // Both processes have resolved (and cached) the key.
      for (const app of [t.app, second])
        expect((await app.inject({ method: 'GET', url: anyPublicRoute, headers: other.headers })).statusCode).toBe(200);
      const keys = await second.inject({
        method: 'GET',
        url: `/admin/v1/businesses/${other.businessId}/api-keys`,
        headers: adminHeaders,
      });
      await second.inject({
        method: 'DELETE',
        url: `/admin/v1/businesses/${other.businessId}/api-keys/${keys.json().api_keys[0].id}`,
        headers: adminHeaders,
      });
      const deadline = Date.now() + 2_000;
      let status = 200;
      while (status !== 401 && Date.now() < deadline) {
        status = (await t.app.inject({ method: 'GET', url: anyPublicRoute, headers: other.headers })).statusCode;
        if (status !== 401) await new Promise((r) => setTimeout(r, 5));
      }
      expect(status).toBe(401);
    } finally {
      await second.close();
    }
  });

  it('does not let one business revoke the key of another', async () => {
    const other = await createTenant(t.app, 'Other');
    const keys = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant.businessId}/api-keys`,
      headers: adminHeaders,
    });
    const keyId = keys.json().api_keys[0].id;
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${other.businessId}/api-keys/${keyId}`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(404);
  });
});

describe('operator API', () => {
  it('refuses a missing or wrong operator token', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong-token-wrong-token' }, { authorization: 'Basic abc' }]) {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers, payload: { name: 'x' } });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it('validates bodies strictly: unknown fields, wrong types, malformed JSON', async () => {
    const cases = [
      { payload: { name: 'x', extra: 1 } },
      { payload: { name: 42 } },
      { payload: {} },
      { payload: '{"name": ', headers: { 'content-type': 'application/json' } },
    ];
    for (const c of cases) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/admin/v1/businesses',
        headers: { ...adminHeaders, ...c.headers },
        payload: c.payload,
      });
      expect(res.statusCode, JSON.stringify(c)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });

  it('is not there without ADMIN_TOKEN', async () => {
    const bare = await buildTestApp({ ADMIN_TOKEN: '' });
    try {
      const res = await bare.app.inject({
        method: 'POST',
        url: '/admin/v1/businesses',
        headers: adminHeaders,
        payload: { name: 'x' },
      });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    } finally {
      await bare.close();
    }
  });
});

describe('health and documentation', () => {
  it('answers /healthz and /readyz', async () => {
    expect((await t.app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready' });
  });

  it('serves an OpenAPI 3.1 document and a reference page', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/admin/v1/businesses');
    const page = await t.app.inject({ url: '/docs' });
    expect([200, 302]).toContain(page.statusCode);
  });

  it('documents what every operation shares: optional parameters with defaults, 500, and 413/415 where a body is read', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const params = (path: string) =>
      Object.fromEntries(
        doc.paths[path].get.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required]),
      );
    expect(params('/external/v2/conversations')).toMatchObject({ message_limit: false, phone: false });
    expect(params('/external/v2/messages')).toMatchObject({ since: true, limit: false });
    expect(params('/external/v2/events')).toMatchObject({ since: true, limit: false });
    expect(params('/external/v2/contacts/{uuid}/messages')).toMatchObject({ limit: false });
    for (const [path, operations] of Object.entries<Record<string, { responses: object; requestBody?: unknown }>>(
      doc.paths,
    )) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(Object.keys(operation.responses), `${method} ${path}`).toContain('500');
        if (operation.requestBody)
          expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['413', '415']));
      }
    }
    for (const path of ['/external/v2/events', '/external/v2/messages']) {
      expect(Object.keys(doc.paths[path].get.responses['429'].headers)).toEqual([
        'Retry-After',
        'RateLimit-Policy',
        'RateLimit',
      ]);
    }
    // Leaving them out is what the document says: the defaults apply.
    const lookup = await t.app.inject({
      url: '/external/v2/conversations?phone=5491100000000',
      headers: tenant.headers,
    });
    expect(lookup.statusCode).toBe(404);
  });

  it('answers unknown routes with the error body', async () => {
    const res = await t.app.inject({ url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });
});
