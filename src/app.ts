import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { appComponents, runComponents } from './components.ts';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/database.ts';
import { answerClientError, answerRouterError, registerErrorHandling } from './http/errors.ts';
import { loggerOptions } from './http/logging.ts';
import { registerOpenApi } from './http/openapi.ts';
import { sharedSerializers } from './http/serializers.ts';
import { registerValidation } from './http/validation.ts';
import { OutboxWorker } from './jobs/outbox.worker.ts';
import { WorkerSession } from './jobs/worker-session.ts';
import { ApiKeyCache } from './modules/api-keys/api-key-cache.ts';
import { databasePaceStore, redisPaceStore } from './modules/sending/channel-pace.store.ts';
import type { Clock } from './lib/clock.ts';
import type { WebhookWorkerOptions } from './modules/webhooks/webhook-worker.ts';
import type { LiveOptions } from './modules/live/live.hub.ts';
import { createServices, type Services } from './services.ts';
import { DASHBOARD_API_PREFIX, dashboardApi } from './surfaces/dashboard-api.ts';
import { DASHBOARD_PREFIX, dashboardWeb } from './surfaces/dashboard-web.ts';
import { ADMIN_PREFIX, operatorApi } from './surfaces/operator-api.ts';
import { PUBLIC_PREFIX, publicApi } from './surfaces/public-api.ts';
import { unauthenticatedRoutes } from './surfaces/unauthenticated.ts';
import { widgetApi } from './surfaces/widget-api.ts';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** Runs the durable background work (provider sends, media fetches, ...). */
    worker: OutboxWorker;
  }
}

export interface AppDeps {
  database: DatabaseHandle;
  /** pino options, or false for none; tests pass false. */
  logger?: boolean | object;
  /** A logger made before the app (the server logs its start-up steps with it); wins over `logger`. */
  loggerInstance?: FastifyBaseLogger;
  /** Start the background work with the app (default true); an API-only process may leave it off. */
  workers?: boolean;
  /** Where time is read (webhook schedules, log expiry); tests pass a clock they move. */
  clock?: Clock;
  /** Webhook delivery worker tuning (concurrency, poll, lease, jitter source). */
  webhookWorker?: WebhookWorkerOptions;
  /** The dashboard's build (index.html and assets/); default web/dist (`npm run build:web`). */
  dashboardRoot?: string;
  /** The dashboards' live streams: their bounds, heartbeat, and how often their sessions are checked. */
  live?: LiveOptions;
}

/** TRUST_PROXY as Fastify takes it: a number of proxies becomes a rule on the hop (its types take no number). */
function trustProxyOption(trust: Config['trustProxy']) {
  if (typeof trust !== 'number') return trust;
  return (_address: string, hop: number) => hop < trust;
}

/**
 * web/dist beside the package: this module is src/app.ts, or bundled into dist/server.js, one folder
 * below the package's root either way.
 */
const DASHBOARD_BUILD = fileURLToPath(new URL('../web/dist', import.meta.url));

/** The website widget's script, built by `npm run build` (scripts/build.mjs), beside the service's bundle. */
const WIDGET_SCRIPT = fileURLToPath(new URL('../dist/widget.js', import.meta.url));

/** Builds the whole HTTP app over an open database: infrastructure, services, components, then surfaces. */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.loggerInstance
      ? { loggerInstance: deps.loggerInstance }
      : { logger: deps.logger ?? loggerOptions(config.logLevel) }),
    bodyLimit: 1024 * 1024,
    trustProxy: trustProxyOption(config.trustProxy),
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
    frameworkErrors: answerRouterError,
    clientErrorHandler: answerClientError,
  });
  registerValidation(app);
  registerErrorHandling(app);
  await registerOpenApi(app, config.publicUrl);

  const db = deps.database.db;
  // On PostgreSQL the jobs this process claims name its worker session, so that other processes take
  // them over as soon as it dies instead of when their leases run out.
  const connect = deps.database.connect;
  const session = connect ? new WorkerSession({ connect, log: app.log }) : undefined;
  const worker = new OutboxWorker(db, app.log, { session });
  // Resolved API keys are cached; with PostgreSQL only while revocations of other processes are heard.
  const apiKeyCache = new ApiKeyCache({ trusted: deps.database.listen === undefined });
  const services = createServices(db, config, worker, {
    engine: deps.database.engine,
    apiKeyCache,
    clock: deps.clock,
    webhookWorker: { session, ...deps.webhookWorker },
    live: deps.live,
  });
  app.decorate('services', services);
  app.decorate('worker', worker);
  // Durable work handlers register here: worker.register(services.<area>.<kind>JobHandler()).
  worker.register(services.media.fetchJobHandler());
  worker.register(services.inbound.profileJobHandler());
  for (const handler of services.mirroring.jobHandlers(app.log)) worker.register(handler);
  // Processes sharing a database share each channel's pace: in Redis when set, else in PostgreSQL
  // (the embedded engine is one process's, which paces alone).
  const paceStore = config.redisUrl
    ? redisPaceStore(new Redis(config.redisUrl, { maxRetriesPerRequest: 2 }))
    : deps.database.engine === 'postgres'
      ? databasePaceStore(db)
      : undefined;
  if (paceStore) app.addHook('onClose', () => paceStore.close());
  worker.register(services.sending.sendJobHandler(app.log, undefined, paceStore));
  worker.register(services.contactMerge.moveJobHandler(app.log));
  worker.register(services.aiRuns.runJobHandler(app.log));
  for (const handler of services.aiTimers.jobHandlers()) worker.register(handler);
  const embedJob = services.search.embedJobHandler();
  if (embedJob) worker.register(embedJob);
  if (services.transcriptionJob) worker.register(services.transcriptionJob);
  runComponents(
    app,
    appComponents(app, deps.database, services, { worker, session }, apiKeyCache),
    deps.workers !== false,
  );

  await app.register(unauthenticatedRoutes, { db });
  await app.register(widgetApi, { config, db, script: WIDGET_SCRIPT });
  await app.register(publicApi, { prefix: PUBLIC_PREFIX, config, db });
  if (config.adminToken) await app.register(operatorApi, { prefix: ADMIN_PREFIX, token: config.adminToken });
  await app.register(dashboardApi, { prefix: DASHBOARD_API_PREFIX, publicUrl: config.publicUrl });
  await app.register(dashboardWeb, { prefix: DASHBOARD_PREFIX, root: deps.dashboardRoot ?? DASHBOARD_BUILD });
  return app;
}
