import type { FastifyInstance } from 'fastify';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';

// Serving the built pages reads files, never the database: one engine is enough.
describe.runIf(engine === 'pglite')('the dashboard under /dashboard', () => {
  const INDEX =
    '<!doctype html><title>Dashboard</title><script type="module" src="/dashboard/assets/app-1a2b.js"></script>';
  const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;
  let t: TestApp;
  let dir: string;
  let app: FastifyInstance;

  beforeAll(async () => {
    t = await buildTestApp();
    dir = await mkdtemp(join(tmpdir(), 'dashboard-build-'));
    await mkdir(join(dir, 'built', 'assets'), { recursive: true });
    await writeFile(join(dir, 'built', 'index.html'), INDEX);
    await writeFile(join(dir, 'built', 'assets', 'app-1a2b.js'), SCRIPT);
    await writeFile(join(dir, 'built', 'assets', 'app-1a2b.js.gz'), gzipSync(SCRIPT));
    app = await buildApp(t.config, { database: t.database, logger: false, dashboardRoot: join(dir, 'built') });
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const expectPage = (response: Awaited<ReturnType<FastifyInstance['inject']>>) => {
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.body).toBe(INDEX);
  };

  it('answers index.html, never cached, at /dashboard and at every page path, so a page opens directly', async () => {
    for (const url of [
      '/dashboard',
      '/dashboard/',
      '/dashboard/login',
      '/dashboard/conversations/0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b',
      '/dashboard/contacts/0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b?tab=messages',
      '/dashboard/settings/channels',
      '/dashboard/apis', // only /dashboard/api and what is under it belongs to the session API
    ])
      expectPage(await app.inject({ url }));
    const head = await app.inject({ method: 'HEAD', url: '/dashboard/contacts' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
  });

  it('answers a page that did not change with 304 to a conditional request', async () => {
    const first = await app.inject({ url: '/dashboard' });
    const again = await app.inject({ url: '/dashboard', headers: { 'if-none-match': first.headers.etag as string } });
    expect(again.statusCode).toBe(304);
  });

  it('serves the hashed assets cached for a year, compressed for a browser that accepts it', async () => {
    const plain = await app.inject({ url: '/dashboard/assets/app-1a2b.js' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toMatch(/javascript/);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.body).toBe(SCRIPT);

    const compressed = await app.inject({
      url: '/dashboard/assets/app-1a2b.js',
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(compressed.headers['content-encoding']).toBe('gzip');
    expect(compressed.headers.vary).toMatch(/accept-encoding/i);
    expect(compressed.rawPayload.length).toBeLessThan(SCRIPT.length / 10);
  });

  it('answers an asset that does not exist with the error body, never the page', async () => {
    for (const url of ['/dashboard/assets/app-0000.js', '/dashboard/assets/..%2f..%2fpackage.json']) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json().error.code, url).toBe('not_found');
    }
    // The folder itself is not listed.
    const folder = await app.inject({ url: '/dashboard/assets/' });
    expect(folder.statusCode).toBe(403);
    expect(folder.json().error.code).toBe('forbidden');
  });

  it('answers 404 with the error body for an unknown session API path, whatever the method', async () => {
    for (const [method, url] of [
      ['GET', '/dashboard/api'],
      ['GET', '/dashboard/api/'],
      ['GET', '/dashboard/api/nothing-here'],
      ['GET', '/dashboard/api/nothing/here?x=1'],
      ['HEAD', '/dashboard/api/nothing-here'],
      ['POST', '/dashboard/api/nothing-here'],
      ['DELETE', '/dashboard/api/nothing-here'],
    ] as const) {
      const response = await app.inject({ method, url });
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.headers['content-type'], `${method} ${url}`).toMatch(/^application\/json/);
      if (method !== 'HEAD') expect(response.json().error.code).toBe('not_found');
    }
  });

  it('answers only GET and HEAD on page paths', async () => {
    const response = await app.inject({ method: 'POST', url: '/dashboard/contacts', payload: {} });
    expect(response.statusCode).toBe(404);
    expect(response.json().error.code).toBe('not_found');
  });

  it('leaves the page paths out of the OpenAPI document', async () => {
    const document = (await app.inject({ url: '/openapi.json' })).json();
    expect(
      Object.keys(document.paths).filter((path) => path.startsWith('/dashboard') && !path.startsWith('/dashboard/api')),
    ).toEqual([]);
  });

  it('starts without a build: it logs a warning and the pages answer 503 with the error body', async () => {
    const lines: { level: number; msg: string; root?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const missing = join(dir, 'not-built');
    const unbuilt = await buildApp(t.config, { database: t.database, loggerInstance: logger, dashboardRoot: missing });
    await unbuilt.ready();
    try {
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 40, root: missing, msg: expect.stringMatching(/not built/) }),
      );
      for (const url of ['/dashboard', '/dashboard/login', '/dashboard/conversations/1']) {
        const response = await unbuilt.inject({ url });
        expect(response.statusCode, url).toBe(503);
        expect(response.json().error).toEqual({
          code: 'unavailable',
          message: expect.stringMatching(/npm run build:web/),
        });
      }
      const api = await unbuilt.inject({ url: '/dashboard/api/nothing-here' });
      expect(api.statusCode).toBe(404);
      expect((await unbuilt.inject({ url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await unbuilt.close();
    }
  });
});
