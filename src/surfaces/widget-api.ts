import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { AppError } from '../http/errors.ts';
import { databaseCounter, deleteEndedCounters, redisCounter, storeFor } from '../http/rate-limit.store.ts';
import { visitorsRoutes } from '../modules/visitors/visitors.routes.ts';

export const WIDGET_PREFIX = '/widget/v1';

declare module 'fastify' {
  interface FastifyRequest {
    /** The business of the widget a limited request names (its rate limits' counters are the business's). */
    widgetBusinessId?: string;
  }
  interface FastifyContextConfig {
    /** The website widget's limit a route counts against: opening sessions, writing, or saying it types. */
    visitorLimit?: 'session' | 'write' | 'typing';
  }
}

/** Per minute: sessions one address opens, and what one address and one visitor write. */
const LIMITS = { sessionsPerAddress: 30, writesPerAddress: 120, writesPerVisitor: 30, typingPerVisitor: 60 };

/** The visitor a write names, by its token (checked by the route; only a counter key here). */
function visitorKey(request: FastifyRequest): string {
  return createHash('sha256')
    .update(request.headers.authorization ?? '')
    .digest('base64url')
    .slice(0, 22);
}

/**
 * The website widget's surface: the script at `/widget.js`, and the visitors' routes under
 * `/widget/v1/:widget`, authenticated by visitor tokens, limited per address and per visitor, and
 * answered only to the channel's allowed origins (CORS).
 */
export const widgetApi: FastifyPluginAsync<{ config: Config; db: Db; script: string }> = async (
  scope,
  { config, db, script },
) => {
  scope.get('/widget.js', { schema: { hide: true } }, async (_request, reply) => {
    const code = await readFile(script).catch(() => undefined);
    if (!code) throw new AppError(404, 'not_found', 'the widget is not built (npm run build)');
    return reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .send(code);
  });

  await scope.register(
    async (api) => {
      const counter = config.redisUrl
        ? redisCounter(new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }))
        : databaseCounter(db);
      api.addHook('onClose', async () => counter.close());
      if (!config.redisUrl) {
        // Redis expires its keys; the table keeps a row per address and visitor until this deletes it.
        const cleanup = setInterval(() => {
          deleteEndedCounters(db, 60_000).catch((err: unknown) =>
            api.log.error({ err }, 'deleting ended rate limit counters failed'),
          );
        }, 3_600_000);
        cleanup.unref();
        api.addHook('onClose', async () => clearInterval(cleanup));
      }
      await api.register(rateLimit, { global: false, store: storeFor(counter) });
      // Counted per business (the counters' table is keyed by it), so the widget's channel is found first.
      const limit = (name: string, max: number, key: (r: FastifyRequest) => string) =>
        api.createRateLimit({
          max,
          timeWindow: 60_000,
          keyGenerator: (r) => `${r.widgetBusinessId}:widget-${name}:${key(r)}`,
        });
      const sessions = limit('sessions', LIMITS.sessionsPerAddress, (r) => r.ip);
      const writesByAddress = limit('writes-address', LIMITS.writesPerAddress, (r) => r.ip);
      const writesByVisitor = limit('writes-visitor', LIMITS.writesPerVisitor, visitorKey);
      const typingByVisitor = limit('typing-visitor', LIMITS.typingPerVisitor, visitorKey);
      // Every route names its widget: the Origin must be one of its channel's (403, 404 otherwise, which the
      // page may not read); then every answer, errors included, may be read by that page (CORS).
      api.addHook('onRequest', async (request, reply) => {
        const { widget } = request.params as { widget?: string };
        if (widget === undefined) return;
        const { channel } = await api.services.visitors.channelFor(widget, request.headers.origin);
        request.widgetBusinessId = channel.business_id;
        reply.header('access-control-allow-origin', request.headers.origin).header('vary', 'Origin');
        const kind = request.routeOptions.config.visitorLimit;
        if (!kind) return;
        const checks =
          kind === 'session' ? [sessions] : kind === 'typing' ? [typingByVisitor] : [writesByAddress, writesByVisitor];
        for (const check of checks) {
          const result = await check(request);
          if (result.isAllowed || !result.isExceeded) continue;
          reply.header('Retry-After', String(Math.max(1, result.ttlInSeconds)));
          throw new AppError(429, 'rate_limited', `too many requests; retry in ${Math.max(1, result.ttlInSeconds)} s`);
        }
      });
      await api.register(visitorsRoutes);
    },
    { prefix: WIDGET_PREFIX },
  );
};
