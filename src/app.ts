import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/database.ts';
import { requireAdminToken } from './http/admin-auth.ts';
import { requireApiKey } from './http/api-key-auth.ts';
import { registerErrorHandling } from './http/errors.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerValidation } from './http/validation.ts';
import { adminRoutes } from './modules/admin/admin.routes.ts';
import { healthRoutes } from './modules/health/health.routes.ts';
import { createServices, type Services } from './services.ts';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
}

export const PUBLIC_PREFIX = '/external/v2';
export const ADMIN_PREFIX = '/admin/v1';

export interface AppDeps {
  database: DatabaseHandle;
  /** pino options, or false for none; tests pass false. */
  logger?: boolean | object;
}

/** Builds the whole HTTP app over an open database: infrastructure, then auth, then modules. */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? { level: config.logLevel, redact: ['req.headers["x-api-key"]', 'req.headers.authorization'] },
    bodyLimit: 1024 * 1024,
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { removeAdditional: false } },
  });
  registerValidation(app);
  registerErrorHandling(app);
  await registerOpenApi(app, config.publicUrl);

  const services = createServices(deps.database.db, config);
  app.decorate('services', services);

  await app.register(healthRoutes, { db: deps.database.db });

  await app.register(
    async (scope) => {
      requireApiKey(scope, (key) => services.apiKeys.resolve(key));
      // Public modules register here, each under /external/v2.
    },
    { prefix: PUBLIC_PREFIX },
  );

  if (config.adminToken) {
    const token = config.adminToken;
    await app.register(
      async (scope) => {
        requireAdminToken(scope, token);
        await scope.register(adminRoutes);
      },
      { prefix: ADMIN_PREFIX },
    );
  }

  return app;
}
