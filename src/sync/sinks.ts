import { createReadStream, existsSync, mkdirSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { isoTimestampSql } from '../db/timestamps.ts';
import type { ExportKind, ExportRecord } from './export-client.ts';
import { withDefaultUser } from '../db/connection-string.ts';

/** Where the sync stores records: it says where to resume, and stores a page once. */
export interface Sink {
  /** The latest created_at held for a kind, or null when nothing is held. */
  lastCreatedAt(kind: ExportKind): Promise<string | null>;
  /** The ids held with created_at at or after `from` (what an overlapping resume must skip). */
  idsSince(kind: ExportKind, from: string): Promise<Set<string>>;
  write(kind: ExportKind, records: ExportRecord[]): Promise<void>;
  close(): Promise<void>;
}

/** `<dir>/messages.ndjson` and `<dir>/events.ndjson`, one record a line, appended in export order. */
export function ndjsonSink(dir: string): Sink {
  mkdirSync(dir, { recursive: true });
  const file = (kind: ExportKind) => join(dir, `${kind}.ndjson`);
  async function* lines(kind: ExportKind): AsyncGenerator<{ id: string; created_at: string }> {
    if (!existsSync(file(kind))) return;
    for await (const line of createInterface({ input: createReadStream(file(kind)), crlfDelay: Infinity })) {
      if (line.trim() === '') continue;
      try {
        const { id, created_at } = JSON.parse(line) as ExportRecord;
        yield { id, created_at };
      } catch {
        // A line cut by an interrupted run is skipped; its record is fetched again by the overlap.
      }
    }
  }
  return {
    async lastCreatedAt(kind) {
      let last: string | null = null;
      for await (const r of lines(kind)) if (last === null || r.created_at > last) last = r.created_at;
      return last;
    },
    async idsSince(kind, from) {
      const ids = new Set<string>();
      for await (const r of lines(kind)) if (r.created_at >= from) ids.add(r.id);
      return ids;
    },
    async write(kind, records) {
      if (records.length > 0) await appendFile(file(kind), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    },
    close: async () => {},
  };
}

/** Tables `sync_messages` and `sync_events` (id, created_at, record jsonb) in a PostgreSQL database. */
export async function postgresSink(connectionString: string): Promise<Sink> {
  const pool = new pg.Pool({ connectionString: withDefaultUser(connectionString), max: 2 });
  for (const kind of ['messages', 'events']) {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS sync_${kind} (id uuid PRIMARY KEY, created_at timestamptz NOT NULL, record jsonb NOT NULL)`,
    );
    await pool.query(`CREATE INDEX IF NOT EXISTS sync_${kind}_created ON sync_${kind} (created_at)`);
  }
  return {
    async lastCreatedAt(kind) {
      const { rows } = await pool.query<{ last: string | null }>(
        `SELECT ${isoTimestampSql('max(created_at)')} AS last FROM sync_${kind}`,
      );
      return rows[0]?.last ?? null;
    },
    async idsSince(kind, from) {
      const { rows } = await pool.query<{ id: string }>(`SELECT id FROM sync_${kind} WHERE created_at >= $1`, [from]);
      return new Set(rows.map((r) => r.id));
    },
    async write(kind, records) {
      if (records.length === 0) return;
      // ON CONFLICT: a record held already (overlap of a resume) is kept as it is.
      await pool.query(
        `INSERT INTO sync_${kind} (id, created_at, record)
         SELECT (r->>'id')::uuid, (r->>'created_at')::timestamptz, r FROM jsonb_array_elements($1::jsonb) AS r
         ON CONFLICT (id) DO NOTHING`,
        [JSON.stringify(records)],
      );
    },
    close: () => pool.end(),
  };
}
