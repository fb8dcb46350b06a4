import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { errorBody } from '../http/errors.ts';

export const DASHBOARD_PREFIX = '/dashboard';

/** The session API's paths: never answered with the app's page, so an unknown one is a plain 404. */
const API_PATH = /^\/dashboard\/api(?:[/?]|$)/;

/**
 * What the page may load: only this origin's scripts, styles and connections, no framing (the session
 * cookie must not be usable by a page that frames the dashboard), images also from data and blob URLs
 * (previews of files before they are sent).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The dashboard's single-page app under /dashboard, built by `npm run build:web` (which `npm install`
 * runs) into `root`: hashed assets under /dashboard/assets, cached for a year; every other page path
 * answers index.html, never cached, so /dashboard/conversations/:id opens directly and a new build is
 * picked up at the next load. Without a build the service still starts: the pages answer 503.
 */
export const dashboardWeb: FastifyPluginAsync<{ root: string }> = async (app, { root }) => {
  const page = (handler: (request: FastifyRequest, reply: FastifyReply) => FastifyReply) => {
    const options = { schema: { hide: true } };
    const answer = async (request: FastifyRequest, reply: FastifyReply) =>
      API_PATH.test(request.url) ? reply.callNotFound() : handler(request, reply);
    app.get('/', options, answer);
    app.get('/*', options, answer);
  };

  if (!existsSync(join(root, 'index.html'))) {
    app.log.warn({ root }, 'the dashboard is not built: /dashboard answers 503 until `npm run build:web` has run');
    page((_request, reply) =>
      reply
        .status(503)
        .header('cache-control', 'no-store')
        .send(errorBody('unavailable', 'the dashboard is not built: run `npm run build:web` and restart the service')),
    );
    return;
  }

  // The build names every asset after a hash of its content, so a name never changes meaning. Each is
  // also written compressed (web/vite.config.ts), and the smallest encoding the browser accepts is sent.
  await app.register(fastifyStatic, {
    root: join(root, 'assets'),
    prefix: '/assets/',
    index: false,
    maxAge: '365d',
    immutable: true,
    preCompressed: true,
  });
  page((_request, reply) =>
    reply
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .sendFile('index.html', root, { cacheControl: false }),
  );
};
