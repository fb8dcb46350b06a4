import { sql } from 'kysely';
import type { Db, Engine } from './database.ts';
import { nextTurn } from './slices.ts';

/** default_statistics_target of the analyses on PGlite (PostgreSQL's default is 100); see analyzeTable(). */
export const PGLITE_STATISTICS_TARGET = 10;

/**
 * Refreshes the planner's statistics of one table. On PGlite an ANALYZE holds the only connection,
 * and every request waits for it, so it is sized like a slice of long work (slices.ts): a table of
 * 200 000 messages took 211 ms with PostgreSQL's default sample (300 x default_statistics_target
 * rows), 60-78 ms with a third of it and 27-31 ms with a tenth, most of which is reading the sample
 * (docs/PERFORMANCE-CHOICES.md#statistics-on-pglite). The plans of the service are index probes, which need
 * row counts more than fine histograms. PostgreSQL analyses on a connection of its own, beside the
 * others, with the server's own target.
 */
export async function analyzeTable(db: Db, engine: Engine, table: string): Promise<void> {
  if (engine !== 'pglite') {
    await sql`analyze ${sql.table(table)}`.execute(db);
    return;
  }
  await db.transaction().execute(async (trx) => {
    await sql`set local default_statistics_target = ${sql.lit(PGLITE_STATISTICS_TARGET)}`.execute(trx);
    await sql`analyze ${sql.table(table)}`.execute(trx);
  });
}

/**
 * Keeps the planner's statistics current where no autovacuum daemon does (PGlite, which is
 * PostgreSQL in single-user mode without background workers, and a PostgreSQL server with
 * `autovacuum = off`), and, on every engine, analyses a table that has doubled since its last
 * analysis.
 *
 * Without statistics the planner costs a table by the size it had when a plan was made, and some
 * plans are kept for the life of a connection: the foreign-key checks PostgreSQL runs on every
 * insert, and the named statements of the service (prepared-statements.ts), those that join a
 * batch's rows to a table among them (json-rows.ts). A check planned while `contacts` was nearly
 * empty read every contact of the business through the external_id index to find one by id (9 ms
 * per conversation created at 2 300 contacts, measured with auto_explain); ANALYZE invalidates
 * such plans, and they are made again at the table's real size.
 *
 * Where no daemon runs, the rule is autovacuum's own: a table is analysed once the rows changed
 * since its last analysis exceed autovacuum_analyze_threshold + autovacuum_analyze_scale_factor x
 * its rows (50 + 10% by default), read from the server's settings, and at most once per
 * autovacuum_naptime (1 minute by default), as the daemon visits a database, so a table whose rows
 * are only updated (a conversation's counters move with each message) is not analysed every few
 * seconds. A table that has more than doubled since the planner last counted it is analysed at
 * once, daemon or not: a new install's tables grow from nothing to thousands of rows within the
 * daemon's minute, and a plan kept from their first rows scans them all the while. Analysed at
 * every doubling, a table is never much bigger than it was when its plans were made. Tables are
 * not vacuumed here: that can hold PGlite's only connection for long on a big table; what matters
 * for the plans is ANALYZE.
 */
export class StatisticsKeeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly db: Db,
    private readonly engine: Engine,
  ) {}

  /** Analyses the tables due; answers their names. */
  async analyzeChanged(): Promise<string[]> {
    const threshold = sql`current_setting('autovacuum_analyze_threshold')::float8`;
    const { rows } = await sql<{ name: string }>`
      select s.relname as name from pg_stat_user_tables s join pg_class c on c.oid = s.relid
      where s.schemaname = current_schema()
        and s.n_mod_since_analyze > ${threshold} + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(s.n_live_tup, 0)
        and (s.n_live_tup > 2 * greatest(c.reltuples, 0) + ${threshold}
          or ((${this.engine === 'pglite'} or current_setting('autovacuum') = 'off')
            and (s.last_analyze is null or s.last_analyze < now() - current_setting('autovacuum_naptime')::interval)))
      order by s.relname`.execute(this.db);
    for (const { name } of rows) {
      await nextTurn(); // each analysis holds PGlite's only connection: requests go between two
      await analyzeTable(this.db, this.engine, name);
    }
    return rows.map((r) => r.name);
  }

  /**
   * Looks every `intervalMs`: one query on the statistics view when nothing is due (about a
   * millisecond). Often, because the plans made before a table's first analysis are the ones that
   * go wrong: on a new install, under 1 000 inbound messages a second, the first seconds answered
   * with a p99 of 90-130 ms against 20-50 ms once the tables were analysed.
   */
  start(onError: (err: unknown) => void, intervalMs = 2_000): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.analyzeChanged()
        .catch(onError)
        .finally(() => (this.running = undefined));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
