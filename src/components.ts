import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from './db/database.ts';
import { StatisticsKeeper } from './db/statistics.ts';
import { endLeasesOfStoppedRun } from './jobs/restart-recovery.ts';
import type { OutboxWorker } from './jobs/outbox.worker.ts';
import type { WorkerSession } from './jobs/worker-session.ts';
import type { ApiKeyCache } from './modules/api-keys/api-key-cache.ts';
import { API_KEY_REVOKED_CHANNEL } from './modules/api-keys/api-keys.repository.ts';
import { CHANNEL_CHANGED } from './modules/channels/channels.repository.ts';
import { LIVE_CHANNEL } from './modules/live/live.events.ts';
import { SIGNAL_CHANNEL } from './modules/live/live.signals.ts';
import type { Services } from './services.ts';

/** A part of the process that runs beside the HTTP server (a worker, a timer, a listener). */
export interface Component {
  name: string;
  /** Only in processes that run the background work (`workers`, default on). */
  background?: boolean;
  start(): Promise<void> | void;
  /** Before the server closes, which waits for its open responses: ends those that never end by themselves. */
  closing?(): Promise<void> | void;
  stop?(): Promise<void> | void;
}

/**
 * Starts the components in list order once the app is ready and stops them in reverse order when it
 * closes, so a component may rely on those before it while it runs. Every component is stopped, even
 * one left unstarted: a test may start a background worker itself, and stopping an idle one is a no-op.
 */
export function runComponents(app: FastifyInstance, components: Component[], background: boolean): void {
  app.addHook('onReady', async () => {
    for (const component of components) {
      if (component.background && !background) continue;
      await component.start();
      app.log.debug({ component: component.name }, 'component started');
    }
  });
  app.addHook('preClose', async () => {
    for (const component of components) await component.closing?.();
  });
  app.addHook('onClose', async () => {
    for (const component of [...components].reverse()) await component.stop?.();
  });
}

/** What runs beside the routes, in start order. */
export function appComponents(
  app: FastifyInstance,
  database: DatabaseHandle,
  services: Services,
  { worker, session }: { worker: OutboxWorker; session?: WorkerSession },
  apiKeyCache: ApiKeyCache,
): Component[] {
  const log = app.log;
  const statistics = new StatisticsKeeper(database.db, database.engine);
  // First in the list, so closed last: the provider calls of the workers stopped before it end first.
  const components: Component[] = [
    { name: 'provider-connections', start: () => {}, stop: () => services.providerConnections.close() },
  ];
  // One process opens an embedded database: what its previous run left in hand is taken over at once.
  if (database.engine === 'pglite') {
    components.push({
      name: 'restart-recovery',
      background: true,
      async start() {
        const ended = await endLeasesOfStoppedRun(database.db);
        if (ended.jobs + ended.deliveries + ended.idempotencyKeys > 0)
          log.info(ended, 'work left in hand by the previous run taken over');
      },
    });
  }
  // On PostgreSQL, jobs are claimed under this process's worker session, taken before the worker's
  // first claim and ended after its last job: its first sweep takes over the jobs of processes whose
  // session ended (a crash, a kill), as restart recovery does on the embedded engine.
  if (session)
    components.push({
      name: 'worker-session',
      background: true,
      start: () => session.start(),
      stop: () => session.stop(),
    });
  components.push(
    { name: 'outbox-worker', background: true, start: () => worker.start(), stop: () => worker.stop() },
    {
      name: 'webhook-deliveries',
      background: true,
      start: () => services.webhooks.start(log),
      stop: () => services.webhooks.stop(),
    },
    // Without the background work, events are still handed over by the requests that commit them.
    {
      name: 'domain-events',
      start: () => services.domainEvents.start(log),
      stop: () => services.domainEvents.stop(),
    },
    { name: 'domain-events-poll', background: true, start: () => services.domainEvents.startPolling() },
    {
      name: 'inbound-poller',
      background: true,
      start: () => services.inboundPoller.start(log),
      stop: () => services.inboundPoller.stop(),
    },
  );
  const listen = database.listen;
  if (listen) components.push(announcements(listen, services, apiKeyCache));
  components.push(
    // The dashboards' live streams: ended before the server closes, checked against their sessions.
    {
      name: 'live-streams',
      start: () => services.live.start(log),
      closing: () => services.live.stop(),
      stop: () => services.live.stop(),
    },
    // The website widget's visitor streams, ended before the server closes.
    {
      name: 'visitor-streams',
      start: () => {},
      closing: () => services.visitors.streams.endAll(),
      stop: () => services.visitors.streams.endAll(),
    },
    {
      name: 'idempotency-cleanup',
      start: () => services.idempotency.startCleanup((err) => log.error({ err }, 'idempotency key cleanup failed')),
      stop: () => services.idempotency.stopCleanup(),
    },
    {
      name: 'dashboard-sessions-cleanup',
      start: () =>
        services.dashboardSessions.startCleanup((err) =>
          log.error({ err }, 'expired dashboard sessions cleanup failed'),
        ),
      stop: () => services.dashboardSessions.stopCleanup(),
    },
    {
      name: 'statistics',
      background: true,
      start: () => statistics.start((err) => log.error({ err }, 'analyzing changed tables failed')),
      stop: () => statistics.stop(),
    },
  );
  return components;
}

/**
 * Other server processes announce revoked keys and changed channels; until they are heard, this
 * process caches neither. Domain events for the dashboards' live streams are announced by every
 * process, this one included; after a break, each stream catches up from the table.
 */
function announcements(
  listen: NonNullable<DatabaseHandle['listen']>,
  services: Services,
  apiKeyCache: ApiKeyCache,
): Component {
  services.channels.setTrusted(false);
  let stop: (() => Promise<void>) | undefined;
  return {
    name: 'announcements',
    async start() {
      stop = await listen(
        {
          [API_KEY_REVOKED_CHANNEL]: (hash) => services.apiKeys.forgetRevoked(hash),
          [CHANNEL_CHANGED]: (keys) => services.channels.forgetAnnounced(keys),
          [LIVE_CHANNEL]: (payload) => services.live.receive(payload),
          [SIGNAL_CHANNEL]: (payload) => services.live.receiveSignal(payload),
        },
        (state) => {
          services.live.listenState(state);
          apiKeyCache.setTrusted(state === 'listening');
          services.channels.setTrusted(state === 'listening');
        },
      );
    },
    stop: () => stop?.(),
  };
}
