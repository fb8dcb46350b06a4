import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { listenPostgres, type ListenState, type NotificationHandlers } from './listen.ts';
import { initPgliteDataDir } from './pglite-init.ts';
import { PgliteSocket } from './pglite-socket.ts';
import { preparingPool } from './prepared-statements.ts';
import { INT8_OID, parseInt8, pgTimestampToIso, TIMESTAMPTZ_OID } from './timestamps.ts';
import type { Database } from './types.ts';

export type Engine = 'pglite' | 'postgres';
export type Db = Kysely<Database>;

/** An open database: the Kysely handle, which engine is behind it, and how to close it. */
export interface DatabaseHandle {
  db: Db;
  engine: Engine;
  /**
   * Receives NOTIFY messages sent by other server processes, on one connection for all the
   * handlers' channels (to the direct URL: LISTEN is session state). Only PostgreSQL has other
   * processes; on the embedded engine every change happens in this one, so there is nothing to
   * listen to.
   */
  listen?(handlers: NotificationHandlers, onState: (state: ListenState) => void): Promise<() => Promise<void>>;
  /**
   * A connection of its own to the direct URL, outside the pool, for state held as long as its
   * session lasts (a session-level lock: src/jobs/worker-session.ts); the caller ends it. Only
   * PostgreSQL has other processes to show such state to.
   */
  connect?(): Promise<pg.Client>;
  /**
   * Runs `work` on a database of one connection to the direct URL, closed afterwards, for work that
   * keeps session state between its statements: the migrations, whose lock (Kysely's) is a
   * session-level advisory lock taken and released outside their transaction. On the embedded
   * engine, the one session there is.
   */
  direct<T>(work: (db: Db) => Promise<T>): Promise<T>;
  /**
   * A copy of the embedded engine's data directory (PGlite's dumpDataDir), which `openDatabase`
   * can start an in-memory database from (`snapshot`). Only the embedded engine has one.
   */
  snapshot?(): Promise<Blob>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL connection string; when absent the embedded PGlite engine is used. */
  databaseUrl?: string;
  /**
   * A connection string straight to PostgreSQL, for what needs a session of its own (LISTEN, the
   * worker session's lock, the migrations) when `databaseUrl` is a pooler in transaction mode
   * (PgBouncer); default `databaseUrl`.
   */
  directUrl?: string;
  /**
   * Whether the pool's hot statements are prepared once per connection under a name
   * (prepared-statements.ts); default true. A pooler in transaction mode hands each transaction
   * whichever server connection is free, where a statement named on another is unknown, unless it
   * keeps them itself (PgBouncer 1.21 and later with max_prepared_statements).
   */
  namedStatements?: boolean;
  /** PGlite data directory, or `memory://`. */
  dataDir?: string;
  /**
   * With `memory://`: start from this copy of a data directory (DatabaseHandle.snapshot) instead of
   * an empty database. Creating an empty one runs initdb, 3-6 s on a 2-core machine; starting from
   * a copy takes 0.4-0.6 s, so the test suite starts each file's database from one migrated copy.
   */
  snapshot?: Blob;
  /** Schema to work in (tests give each file its own); default `public`. */
  schema?: string;
  poolSize?: number;
}

/**
 * PostgreSQL settings of the embedded engine. PGlite's buffers live in its WebAssembly memory, which
 * grows and never shrinks, so they count in full against the service's resident memory. With the
 * default shared_buffers of 128 MB that memory held 169 MB through an import of 1 000 000 messages;
 * with 16 MB it held 47 MB, at the same import speed (docs/PERFORMANCE-CHOICES.md#pglite-memory). The data
 * files stay in the operating system's page cache, which is not the service's memory.
 */
const PGLITE_SETTINGS = { shared_buffers: '16MB' };

const parsers: Record<number, (value: string) => unknown> = {
  [TIMESTAMPTZ_OID]: pgTimestampToIso,
  [INT8_OID]: parseInt8,
};

/** node-postgres's type parsers, with ours for timestamps and counts. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    parsers[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * Kysely over a pg pool whose queries use named statements (prepared-statements.ts), so the
 * database skips parsing and planning of repeated queries; or plain, unnamed ones.
 */
function kyselyOver(pool: pg.Pool, namedStatements = true): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: namedStatements ? preparingPool(pool) : pool }) });
}

/**
 * A pg pool to PostgreSQL whose connections work in UTC. The time zone is set by a statement on each
 * new connection, not in the startup packet's `options`, which PgBouncer refuses; PgBouncer keeps
 * TimeZone per client and sets it again on each server connection it hands that client. The schema
 * (tests give each file its own) stays in `options`: PgBouncer keeps no search_path per client, so
 * a schema other than the default works on direct connections only.
 */
function postgresPool(connectionString: string, max: number, schema: string | undefined): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    options: schema ? `-c search_path=${schema}` : undefined,
    types,
    // Awaited before the pool hands the new connection out; a failure fails that checkout. (pg-pool
    // awaits the promise; @types/pg still declares a void return.)
    // eslint-disable-next-line @typescript-eslint/no-misused-promises
    onConnect: async (client) => {
      await client.query(`SET TIME ZONE 'UTC'`);
    },
  });
  // An idle connection closed by the server (restart, failover, terminated backend) is dropped by
  // the pool, which opens a new one on demand; unhandled, the event would stop the process.
  pool.on('error', () => undefined);
  return pool;
}

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const { databaseUrl, schema } = options;
    const directUrl = options.directUrl ?? databaseUrl;
    const pool = postgresPool(databaseUrl, options.poolSize ?? 20, schema);
    if (schema) {
      const client = await pool.connect();
      try {
        await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      } finally {
        client.release();
      }
    }
    const db = kyselyOver(pool, options.namedStatements ?? true);
    return {
      db,
      engine: 'postgres',
      listen: (handlers, onState) => listenPostgres({ connectionString: directUrl }, handlers, onState),
      connect: async () => {
        const client = new pg.Client({
          connectionString: directUrl,
          options: schema ? `-c search_path=${schema}` : undefined,
          types,
        });
        await client.connect();
        return client;
      },
      direct: async (work) => {
        const direct = kyselyOver(postgresPool(directUrl, 1, schema), false);
        try {
          return await work(direct);
        } finally {
          await direct.destroy();
        }
      },
      close: () => db.destroy(),
    };
  }

  const dataDir = options.dataDir ?? './data';
  const pgliteDir = dataDir === 'memory://' ? undefined : `${dataDir}/pglite`;
  if (pgliteDir) {
    mkdirSync(dataDir, { recursive: true });
    // A new directory is created by a child process: created here, it would leave ~600 MB behind.
    await initPgliteDataDir(pgliteDir);
  }
  // Loaded only here, so a process on PostgreSQL does not hold PGlite's JavaScript in memory.
  const { PGlite } = await import('@electric-sql/pglite');
  // pgvector, for the AI agent's search (migration 0032); its files load only when the extension is created.
  const { vector } = await import('@electric-sql/pglite-pgvector');
  const settings = Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  const loadDataDir = pgliteDir === undefined ? options.snapshot : undefined;
  const pglite = await PGlite.create(pgliteDir, {
    loadDataDir,
    extensions: { vector },
    startParams: [...PGlite.defaultStartParams, ...settings],
  });
  await pglite.exec(`SET TIME ZONE 'UTC'`);
  // node-postgres speaks to PGlite in this process, over a socket that hands its bytes to PGlite
  // (pglite-socket.ts): the same driver, type parsers and named statements as on PostgreSQL. Named,
  // a shared lookup statement of five calls runs in 0.37 ms instead of 1.52 ms through PGlite's
  // query(), which parses and plans every statement (docs/PERFORMANCE-CHOICES.md#pglite-through-node-postgres).
  // PGlite is a single session, so the pool holds one client: a transaction owns it until it ends,
  // and other queries wait their turn. The client is never closed for idleness.
  const pool = new pg.Pool({
    stream: () => new PgliteSocket(pglite),
    user: 'postgres',
    database: 'postgres',
    max: 1,
    idleTimeoutMillis: 0,
    types,
  });
  const db = kyselyOver(pool);
  return {
    db,
    engine: 'pglite',
    snapshot: () => pglite.dumpDataDir('none'),
    direct: (work) => work(db),
    close: async () => {
      await db.destroy();
      await pglite.close();
    },
  };
}
