import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { seedDemoIfEmpty } from './modules/demo/demo.seed.ts';

/** The process: configuration, database, migrations, the app, and a clean stop on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  await migrateToLatest(database.db);
  const app = await buildApp(config, { database });
  // Channels and webhooks stored by an earlier version hold their secrets in the clear: sealed now.
  const sealed = { channels: await app.services.channels.sealStored(), webhooks: await app.services.webhooks.service.sealStored() };
  if (sealed.channels + sealed.webhooks > 0) app.log.info({ sealed }, 'stored secrets sealed');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    try {
      await app.close();
      await database.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  if (database.engine === 'pglite' && config.seedDemo) {
    const demo = await seedDemoIfEmpty(app.services);
    if (demo) printDemo(config.publicUrl, demo.key, demo.contactPhone);
  }
}

function printDemo(publicUrl: string, key: string, phone: string): void {
  // Printed once, to the terminal only (never to the log): the key is not stored in clear anywhere.
  process.stdout.write(
    `\nA demo business was created. Its API key (shown only now):\n\n  ${key}\n\nTry it:\n\n` +
      `  curl -s '${publicUrl}/external/v2/contacts?phone=${phone}' -H 'X-API-Key: ${key}'\n\n`,
  );
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`configuration error: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
