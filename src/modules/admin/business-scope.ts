import type { FastifyInstance } from 'fastify';

/**
 * In the operator routes of a plugin, an unknown business (`:bid`) answers 404 before any handler
 * runs, so each handler can take the business as given. Hooks stay inside the plugin that adds
 * them; routes without `:bid` are left alone.
 */
export function requireBusiness(app: FastifyInstance): void {
  app.addHook('preHandler', async (request) => {
    const { bid } = request.params as { bid?: string };
    if (bid !== undefined) await app.services.businesses.get(bid);
  });
}
