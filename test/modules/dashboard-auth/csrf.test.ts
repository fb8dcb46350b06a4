import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn, type Browser } from './dashboard-helpers.ts';

let t: TestApp;
let browser: Browser;
let other: Browser;
/** Every dashboard operation of the OpenAPI document: those added by other modules are checked too. */
let operations: { method: string; path: string; open: boolean }[];

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  const { businessId } = await createTenant(t.app, 'Acme');
  await createUser(t.app, businessId, { email: 'owner@acme.test', password: 'correct horse', role: 'owner' });
  await createUser(t.app, businessId, { email: 'other@acme.test', password: 'correct horse', role: 'owner' });
  browser = await signIn(t.app, 'owner@acme.test', 'correct horse');
  other = await signIn(t.app, 'other@acme.test', 'correct horse');
  const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  operations = Object.entries(document.paths as Record<string, Record<string, { security?: unknown[] }>>)
    .filter(([path]) => path.startsWith('/dashboard/api/'))
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        method: method.toUpperCase(),
        path: path.replace(/\{[^}]+\}/g, newId()).slice('/dashboard/api'.length),
        open: operation.security?.length === 0,
      })),
    );
});
afterAll(() => t.close());

describe('the session API', () => {
  it('documents its operations, two of them open', () => {
    expect(operations.filter((o) => o.open).map((o) => `${o.method} ${o.path}`)).toEqual([
      'POST /session',
      'POST /invitations/accept',
    ]);
    expect(operations.filter((o) => o.method !== 'GET').length).toBeGreaterThanOrEqual(7);
  });

  it('answers 401 on every other operation without a session', async () => {
    for (const { method, path } of operations.filter((o) => !o.open)) {
      const res = await t.app.inject({
        method: method as 'GET',
        url: `/dashboard/api${path}`,
        ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }),
      });
      expect(res.statusCode, `${method} ${path}`).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it('refuses every write of a session without its CSRF token, or with a wrong one or another session’s', async () => {
    const writes = operations.filter((o) => !o.open && o.method !== 'GET');
    for (const { method, path } of writes) {
      for (const token of [undefined, '', 'wrong', other.csrf]) {
        const res = await call(t.app, browser, method, path, method === 'DELETE' ? undefined : {}, {
          'x-csrf-token': token,
        });
        expect(res.statusCode, `${method} ${path} with ${token}`).toBe(403);
        expect(res.json().error.code).toBe('csrf_failed');
      }
    }
    // Nothing was done: the session is still there, and still the owner's.
    expect((await call(t.app, browser, 'GET', '/session')).json().user.email).toBe('owner@acme.test');
  });

  it("refuses a write from another site's page, even with the token", async () => {
    const res = await call(t.app, browser, 'DELETE', '/session', undefined, { origin: 'https://evil.test' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('csrf_failed');
    const proxied = await call(
      t.app,
      browser,
      'PUT',
      '/session/business',
      { business_id: newId() },
      {
        origin: 'http://localhost:5173',
        host: 'localhost:5173',
      },
    );
    expect(proxied.statusCode).toBe(404);
  });

  it('reads GET without a CSRF token', async () => {
    expect((await call(t.app, browser, 'GET', '/session', undefined, { 'x-csrf-token': undefined })).statusCode).toBe(
      200,
    );
  });
});
