import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { CursorCodec } from '../../http/cursor.ts';
import { dashboardLinks } from '../../lib/links.ts';
import { SecretBox } from '../../lib/secret-box.ts';
import { guardedAgent } from '../../net/ssrf-guard.ts';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { WebhookEvents } from './webhook-events.ts';
import { WebhookDeliveryWorker, type WebhookWorkerOptions } from './webhook-worker.ts';
import { WebhooksService } from './webhooks.service.ts';

type Log = { error(obj: object, msg: string): void };

/** How often old log rows are deleted. */
const CLEANUP_EVERY_MS = 3600 * 1000;

/** The webhook area, built once per app: registrations (service), the message hook (events) and the delivery worker. */
export interface Webhooks {
  service: WebhooksService;
  /** Called by the code that stores messages, inside its transaction. */
  events: WebhookEvents;
  worker: WebhookDeliveryWorker;
  /** Starts delivering and the periodic log cleanup. */
  start(log: Log): void;
  /** Stops both and closes the outbound connection pool. */
  stop(): Promise<void>;
}

export function createWebhooks(
  db: Db,
  config: Config,
  clock: Clock = systemClock,
  options: WebhookWorkerOptions = {},
): Webhooks {
  const policy = { allowPrivate: config.allowPrivateWebhookTargets };
  const dispatcher = guardedAgent(policy);
  let log: Log | undefined;
  // Signing secrets and custom header values are stored sealed (lib/secret-box.ts) and opened only
  // to sign and send. Each under a key of its own: a sealed signing secret copied into a header's
  // place in the database does not open there, so it cannot be sent out as a header.
  const secrets = new SecretBox(config.secretKeys, 'webhook-secrets');
  const headerValues = new SecretBox(config.secretKeys, 'webhook-headers');
  const worker = new WebhookDeliveryWorker(
    { db, clock, dispatcher, policy, secrets, headerValues, log: { error: (obj, msg) => log?.error(obj, msg) } },
    options,
  );
  const wake = () => worker.wake();
  const service = new WebhooksService(
    db,
    policy,
    clock,
    wake,
    secrets,
    headerValues,
    new CursorCodec(config.secretKeys),
  );
  const events = new WebhookEvents(
    dashboardLinks(config.publicUrl),
    { secretKeys: config.secretKeys, publicUrl: config.publicUrl },
    clock,
    wake,
  );
  let timer: NodeJS.Timeout | undefined;
  return {
    service,
    events,
    worker,
    start(logger) {
      log = logger;
      worker.start();
      const cleanup = () =>
        void service.cleanup().catch((err: unknown) => log?.error({ err }, 'webhook log cleanup failed'));
      timer = setInterval(cleanup, CLEANUP_EVERY_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await worker.stop();
      await dispatcher.close();
    },
  };
}
