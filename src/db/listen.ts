import pg from 'pg';

/** Whether notifications are being received; while not, a listener must not trust what it cached. */
export type ListenState = 'listening' | 'interrupted';

/**
 * Receives PostgreSQL NOTIFY messages on one channel over a dedicated connection (a pooled one
 * would be handed to queries), and reconnects after a failure. `onState` says when messages may have
 * been missed, so caches that rely on them can drop what they hold.
 */
export async function listenPostgres(
  clientConfig: pg.ClientConfig,
  channel: string,
  onMessage: (payload: string) => void,
  onState: (state: ListenState) => void,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client(clientConfig);
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) onMessage(message.payload);
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
      await next.query(`LISTEN ${next.escapeIdentifier(channel)}`);
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
