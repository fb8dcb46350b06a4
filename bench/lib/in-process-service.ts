import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { loggerOptions } from '../../src/http/logging.ts';
import { ADMIN_TOKEN, type Storage } from './service.ts';

/** The service running in the benchmark's own process, with its app for what only code can reach. */
export interface InProcessService {
  url: string;
  app: FastifyInstance;
  stop(): Promise<void>;
}

/**
 * Starts the service in this process, as src/server.ts does (configuration from the environment
 * given, migrations, the app with its background work, listening on loopback). For a channel whose
 * vendor is reached through a library object the benchmark replaces (WhatsApp Web's socket
 * factory), which a separate process would not see.
 */
export async function startInProcessService(
  storage: Storage,
  port: number,
  extraEnv: Record<string, string> = {},
): Promise<InProcessService> {
  const config = loadConfig({
    ...process.env,
    ...storage.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN,
    SEED_DEMO: 'false',
    LOG_LEVEL: 'warn',
    ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
    ...extraEnv,
  });
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    directUrl: config.databaseDirectUrl,
    namedStatements: config.databaseNamedStatements,
    dataDir: config.dataDir,
  });
  await database.direct((db) => migrateToLatest(db));
  const app = await buildApp(config, { database, loggerInstance: pino(loggerOptions(config.logLevel)) });
  await app.listen({ port: config.port, host: config.host });
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    stop: async () => {
      await app.close();
      await database.close();
    },
  };
}
