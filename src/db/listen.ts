import pg from 'pg';

/** Whether notifications are being received; while not, a listener must not trust what it cached. */
export type ListenState = 'listening' | 'interrupted';

/** What to do with each NOTIFY channel's messages, by channel name. */
export type NotificationHandlers = Readonly<Record<string, (payload: string) => void>>;

/**
 * Receives PostgreSQL NOTIFY messages on the handlers' channels over one dedicated connection (a
 * pooled one would be handed to queries), and reconnects after a failure. `onState` says when
 * messages may have been missed, so caches that rely on them can drop what they hold.
 */
export async function listenPostgres(
  clientConfig: pg.ClientConfig,
  handlers: NotificationHandlers,
  onState: (state: ListenState) => void,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client(clientConfig);
    next.on('notification', (message) => {
      if (message.payload !== undefined && Object.hasOwn(handlers, message.channel))
        handlers[message.channel](message.payload);
    });
    const lost = () => {
      if (client !== next || stopped) return;
      client = undefined;
      onState('interrupted');
      retry = setTimeout(() => void connect().catch(() => undefined), 1_000);
    };
    next.on('error', lost);
    next.on('end', lost);
    try {
      await next.connect();
      for (const channel of Object.keys(handlers)) await next.query(`LISTEN ${next.escapeIdentifier(channel)}`);
    } catch (err) {
      await next.end().catch(() => undefined);
      if (!stopped) retry = setTimeout(() => void connect().catch(() => undefined), 1_000);
      throw err;
    }
    if (stopped) {
      await next.end();
      return;
    }
    client = next;
    onState('listening');
  };

  onState('interrupted');
  await connect().catch(() => undefined);
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const current = client;
    client = undefined;
    await current?.end().catch(() => undefined);
  };
}
