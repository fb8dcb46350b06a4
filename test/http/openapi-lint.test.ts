import { lintFromString, loadConfig } from '@redocly/openapi-core';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
});
afterAll(() => t.close());

describe('the OpenAPI document', () => {
  it("passes Redocly's recommended rules (redocly.yaml), so generated clients get names and security for every operation", async () => {
    const source = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).body;
    const config = await loadConfig({ configPath: resolve('redocly.yaml') });
    const problems = await lintFromString({ source, absoluteRef: resolve('openapi.json'), config });
    const found = problems
      .filter((p) => !p.ignored)
      .map((p) => `${p.severity} ${p.ruleId} ${p.location.map((l) => l.pointer).join(',')}: ${p.message}`);
    expect(found).toEqual([]);
  });

  it('names every operation once, and says which take no key', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const operations = Object.values(document.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((path) => Object.values(path))
      .filter((operation) => typeof operation === 'object');
    const ids = operations.map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(document.paths['/external/v2/contacts/{uuid}/messages'].get.operationId).toBe('getContactsByUuidMessages');
    expect(document.paths['/admin/v1/businesses/{bid}/webhooks'].post.operationId).toBe(
      'postAdminBusinessesByBidWebhooks',
    );
    expect(document.paths['/healthz'].get.security).toEqual([]);
    expect(document.paths['/external/v2/contacts'].get.security).toEqual([{ apiKey: [] }]);
    expect(document.paths['/dashboard/api/session'].get).toMatchObject({
      operationId: 'getDashboardSession',
      tags: ['dashboard'],
      security: [{ sessionCookie: [] }],
    });
    expect(document.paths['/dashboard/api/session'].post.security).toEqual([]);
    expect(document.components.securitySchemes.sessionCookie).toMatchObject({
      type: 'apiKey',
      in: 'cookie',
      name: 'session',
    });
    expect(document.webhooks.message_created.post).toMatchObject({ operationId: 'messageCreated', security: [] });
  });
});
