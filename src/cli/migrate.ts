import { loadConfig } from '../config.ts';
import { openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';

const config = loadConfig();
const database = await openDatabase({
  databaseUrl: config.databaseUrl,
  directUrl: config.databaseDirectUrl,
  namedStatements: config.databaseNamedStatements,
  dataDir: config.dataDir,
});
try {
  // On a connection of its own: the migrations' lock is session state, which a pooler would lose.
  const applied = await database.direct((db) => migrateToLatest(db));
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
} finally {
  await database.close();
}
