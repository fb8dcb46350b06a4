import rateLimit from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { AppError } from './errors.ts';
import { databaseCounter, redisCounter, storeFor } from './rate-limit.store.ts';

/** The contract's limit groups: GET /events alone; GET /messages with GET /contacts/:uuid/timeline. */
export type RateGroup = 'exports' | 'events';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The per-business limit group a route counts against. */
    rateGroup?: RateGroup;
  }
}

/**
 * Per-business fixed-window limits on the routes of the scope that name a `rateGroup`, counted in
 * Redis when REDIS_URL is set, else in the database, so every server process shares them. Every
 * answer of those routes carries `RateLimit-Policy` and `RateLimit` (IETF draft form); a 429 also
 * `Retry-After`. Register after the API-key hook: the key is the request's business.
 */
export async function registerRateLimits(scope: FastifyInstance, config: Config, db: Db): Promise<void> {
  const counter = config.redisUrl
    ? redisCounter(new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }))
    : databaseCounter(db);
  scope.addHook('onClose', async () => counter.close());
  await scope.register(rateLimit, { global: false, store: storeFor(counter) });
  const windowMs = config.rateLimitWindowSeconds * 1000;
  const max: Record<RateGroup, number> = {
    exports: config.rateLimitExportsPerWindow,
    events: config.rateLimitEventsPerWindow,
  };
  const limiters = Object.fromEntries(
    (Object.keys(max) as RateGroup[]).map((group) => [
      group,
      scope.createRateLimit({
        max: max[group],
        timeWindow: windowMs,
        keyGenerator: (req: FastifyRequest) => `${req.businessId}:${group}`,
      }),
    ]),
  ) as Record<RateGroup, ReturnType<FastifyInstance['createRateLimit']>>;

  scope.addHook('onRequest', async (request, reply) => {
    const group = request.routeOptions.config.rateGroup;
    if (!group) return;
    const result = await limiters[group](request);
    if (result.isAllowed) return;
    const resetSeconds = Math.max(1, result.ttlInSeconds);
    reply.header('RateLimit-Policy', `"${group}";q=${result.max};w=${config.rateLimitWindowSeconds}`);
    reply.header('RateLimit', `"${group}";r=${result.remaining};t=${resetSeconds}`);
    if (result.isExceeded) {
      reply.header('Retry-After', String(resetSeconds));
      throw new AppError(
        429,
        'rate_limited',
        `rate limit of ${result.max} requests per ${config.rateLimitWindowSeconds} s exceeded for this business; retry in ${resetSeconds} s`,
      );
    }
  });
}
