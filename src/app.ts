import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/database.ts';
import { requireAdminToken } from './http/admin-auth.ts';
import { requireApiKey } from './http/api-key-auth.ts';
import { answerClientError, answerRouterError, registerErrorHandling } from './http/errors.ts';
import { loggerOptions } from './http/logging.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerValidation } from './http/validation.ts';
import { adminRoutes } from './modules/admin/admin.routes.ts';
import { contactsRoutes } from './modules/contacts/contacts.routes.ts';
import { contactMergeRoutes } from './modules/contact-merge/contact-merge.routes.ts';
import { conversationsRoutes } from './modules/conversations/conversations.routes.ts';
import { healthRoutes } from './modules/health/health.routes.ts';
import { importRoutes } from './modules/import/import.routes.ts';
import { channelsAdminRoutes } from './modules/channels/channels.routes.ts';
import { inboundRoutes } from './modules/inbound/inbound.routes.ts';
import { messagesRoutes } from './modules/messages/messages.routes.ts';
import { sendingRoutes } from './modules/sending/sending.routes.ts';
import { agentsAdminRoutes } from './modules/agents/agents.admin-routes.ts';
import { agentsRoutes } from './modules/agents/agents.routes.ts';
import { searchAdminRoutes } from './modules/search/search.admin-routes.ts';
import { searchRoutes } from './modules/search/search.routes.ts';
import { endLeasesOfStoppedRun } from './jobs/restart-recovery.ts';
import { OutboxWorker } from './jobs/outbox.worker.ts';
import { StatisticsKeeper } from './db/statistics.ts';
import { ApiKeyCache } from './modules/api-keys/api-key-cache.ts';
import { API_KEY_REVOKED_CHANNEL } from './modules/api-keys/api-keys.repository.ts';
import { CHANNEL_CHANGED } from './modules/channels/channels.repository.ts';
import { registerIdempotency } from './http/idempotency.ts';
import { fileRoutes, mediaRoutes } from './modules/media/media.routes.ts';
import { templatesAdminRoutes } from './modules/templates/templates.routes.ts';
import { createServices, type Services } from './services.ts';
import type { Clock } from './modules/webhooks/webhook-clock.ts';
import type { WebhookWorkerOptions } from './modules/webhooks/webhook-worker.ts';
import { webhooksAdminRoutes } from './modules/webhooks/webhooks.routes.ts';
import { registerRateLimits } from './http/rate-limit.ts';
import { exportsRoutes } from './modules/exports/exports.routes.ts';
import { timelineRoutes } from './modules/timeline/timeline.routes.ts';
import { conversationOpsRoutes } from './modules/events/conversation-ops.routes.ts';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** Runs the durable background work (provider sends, media fetches, ...). */
    worker: OutboxWorker;
  }
}

export const PUBLIC_PREFIX = '/external/v2';
export const ADMIN_PREFIX = '/admin/v1';

export interface AppDeps {
  database: DatabaseHandle;
  /** pino options, or false for none; tests pass false. */
  logger?: boolean | object;
  /** Start the outbox worker with the app (default true); an API-only process may leave it off. */
  workers?: boolean;
  /** Where time is read (webhook schedules, log expiry); tests pass a clock they move. */
  clock?: Clock;
  /** Webhook delivery worker tuning (concurrency, poll, lease, jitter source). */
  webhookWorker?: WebhookWorkerOptions;
}

/** Builds the whole HTTP app over an open database: infrastructure, then auth, then modules. */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? loggerOptions(config.logLevel),
    bodyLimit: 1024 * 1024,
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { removeAdditional: false } },
    frameworkErrors: answerRouterError,
    clientErrorHandler: answerClientError,
  });
  registerValidation(app);
  registerErrorHandling(app);
  await registerOpenApi(app, config.publicUrl);

  const worker = new OutboxWorker(deps.database.db, app.log);
  // Resolved API keys are cached; with PostgreSQL only while revocations of other processes are heard.
  const apiKeyCache = new ApiKeyCache({ trusted: deps.database.listen === undefined });
  const services = createServices(deps.database.db, config, worker, {
    apiKeyCache,
    clock: deps.clock,
    webhookWorker: deps.webhookWorker,
  });
  app.decorate('services', services);
  app.decorate('worker', worker);
  // Durable work handlers register here: worker.register(services.<area>.<kind>JobHandler()).
  worker.register(services.media.fetchJobHandler());
  worker.register(services.sending.sendJobHandler());
  const embedJob = services.search.embedJobHandler();
  if (embedJob) worker.register(embedJob);
  // One process opens an embedded database: what its previous run left in hand is taken over at once.
  if (deps.workers !== false && deps.database.engine === 'pglite') {
    app.addHook('onReady', async () => {
      const ended = await endLeasesOfStoppedRun(deps.database.db);
      if (ended.jobs + ended.deliveries + ended.idempotencyKeys > 0)
        app.log.info(ended, 'work left in hand by the previous run taken over');
    });
  }
  if (deps.workers !== false) app.addHook('onReady', async () => worker.start());
  app.addHook('onClose', async () => worker.stop());
  if (deps.workers !== false) app.addHook('onReady', async () => services.webhooks.start(app.log));
  app.addHook('onClose', async () => services.webhooks.stop());
  // Other server processes announce revoked keys and changed channels; until they are heard, this
  // process caches neither.
  const listen = deps.database.listen;
  if (listen) {
    services.channels.setTrusted(false);
    let stop: (() => Promise<void>) | undefined;
    app.addHook('onReady', async () => {
      stop = await listen(
        {
          [API_KEY_REVOKED_CHANNEL]: (hash) => services.apiKeys.forgetRevoked(hash),
          [CHANNEL_CHANGED]: (keys) => services.channels.forgetAnnounced(keys),
        },
        (state) => {
          apiKeyCache.setTrusted(state === 'listening');
          services.channels.setTrusted(state === 'listening');
        },
      );
    });
    app.addHook('onClose', async () => stop?.());
  }
  app.addHook('onReady', async () =>
    services.idempotency.startCleanup((err) => app.log.error({ err }, 'idempotency key cleanup failed')),
  );
  app.addHook('onClose', async () => services.idempotency.stopCleanup());
  const statistics = new StatisticsKeeper(deps.database.db, deps.database.engine);
  if (deps.workers !== false)
    app.addHook('onReady', async () =>
      statistics.start((err) => app.log.error({ err }, 'analyzing changed tables failed')),
    );
  app.addHook('onClose', async () => statistics.stop());

  await app.register(healthRoutes, { db: deps.database.db });
  // Provider webhooks: called by the providers, authenticated by their signatures, not by API keys.
  await app.register(inboundRoutes);
  // Signed file addresses carry their own permission, so they live outside the API-key scope.
  await app.register(fileRoutes);

  await app.register(
    async (scope) => {
      requireApiKey(scope, (key) => services.apiKeys.resolve(key));
      registerIdempotency(scope, services.idempotency);
      await registerRateLimits(scope, config, deps.database.db);
      // Public modules register here, each under /external/v2.
      await scope.register(exportsRoutes);
      await scope.register(timelineRoutes);
      await scope.register(mediaRoutes);
      await scope.register(contactsRoutes);
      await scope.register(conversationsRoutes);
      await scope.register(messagesRoutes);
      await scope.register(contactMergeRoutes);
      await scope.register(sendingRoutes);
      await scope.register(agentsRoutes);
      await scope.register(searchRoutes);
    },
    { prefix: PUBLIC_PREFIX },
  );

  if (config.adminToken) {
    const token = config.adminToken;
    await app.register(
      async (scope) => {
        requireAdminToken(scope, token);
        await scope.register(adminRoutes);
        await scope.register(templatesAdminRoutes);
        await scope.register(importRoutes);
        await scope.register(channelsAdminRoutes);
        await scope.register(agentsAdminRoutes);
        await scope.register(searchAdminRoutes);
        await scope.register(webhooksAdminRoutes);
        await scope.register(conversationOpsRoutes);
      },
      { prefix: ADMIN_PREFIX },
    );
  }

  return app;
}
