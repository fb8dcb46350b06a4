import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '../db/database.ts';
import { healthRoutes } from '../modules/health/health.routes.ts';
import { inboundRoutes } from '../modules/inbound/inbound.routes.ts';
import { fileRoutes } from '../modules/media/media.routes.ts';

/**
 * What answers without an API key: health checks; provider webhooks, authenticated by the
 * providers' signatures; and signed file addresses, which carry their own permission.
 */
export const unauthenticatedRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  await app.register(healthRoutes, { db });
  await app.register(inboundRoutes);
  await app.register(fileRoutes);
};
