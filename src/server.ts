import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { seedDemoIfEmpty, type DemoSeed } from './modules/demo/demo.seed.ts';
import { loggerOptions } from './http/logging.ts';
import { pino } from 'pino';

/** The process: configuration, database, migrations, the app, and a clean stop on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino(loggerOptions(config.logLevel));
  const engine = config.databaseUrl ? 'postgres' : 'pglite';
  log.info({ engine, dataDir: config.dataDir }, 'opening the database');
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    directUrl: config.databaseDirectUrl,
    namedStatements: config.databaseNamedStatements,
    dataDir: config.dataDir,
  });
  // On a connection of its own: the migrations' lock is session state, which a pooler would lose.
  const applied = await database.direct((db) => migrateToLatest(db));
  log.info({ applied }, applied.length > 0 ? 'migrations applied' : 'database schema up to date');
  const app = await buildApp(config, { database, loggerInstance: log });
  // Secrets stored in the clear by an earlier version, or sealed with a key now among
  // SECRET_KEY_FALLBACKS, are sealed with SECRET_KEY now.
  const channels = await app.services.channels.sealStored();
  const webhooks = await app.services.webhooks.service.sealStored();
  const links = await app.services.channelLinks.sealStored();
  if (channels.sealed + webhooks.sealed + links.sealed > 0)
    app.log.info(
      { channels: channels.sealed, webhooks: webhooks.sealed, links: links.sealed },
      'stored secrets sealed with SECRET_KEY',
    );
  if (channels.unopened + webhooks.unopened + links.unopened > 0) {
    app.log.error(
      { channels: channels.unopened, webhooks: webhooks.unopened, links: links.unopened },
      'stored secrets that neither SECRET_KEY nor SECRET_KEY_FALLBACKS open: set the key they were sealed with as a fallback',
    );
  }

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
    if (demo) printDemo(config.publicUrl, demo);
  }
}

function printDemo(publicUrl: string, { key, contactPhone, agentId, owner }: DemoSeed): void {
  // Printed once, to the terminal only (never to the log): the key and the password are not stored in clear anywhere.
  process.stdout.write(
    `\nA demo business was created. Sign in to its dashboard at ${publicUrl}/dashboard with\n\n` +
      `  email:    ${owner.email}\n  password: ${owner.password}\n\n` +
      `Its API key (shown only now, like the password):\n\n  ${key}\n\nTry it:\n\n` +
      `  curl -s '${publicUrl}/external/v2/contacts?phone=${contactPhone}' -H 'X-API-Key: ${key}'\n` +
      `  curl -s '${publicUrl}/external/v2/conversations?phone=${contactPhone}' -H 'X-API-Key: ${key}'\n` +
      `  curl -s '${publicUrl}/external/v2/agents/${agentId}' -H 'X-API-Key: ${key}'\n\n`,
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
