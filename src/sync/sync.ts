import { isoFromMicros, parseInstant } from '../modules/exports/exports.window.ts';
import { ExportClient, type ClientOptions, type ExportKind } from './export-client.ts';
import type { Sink } from './sinks.ts';

const DAY_MICROS = 24n * 3600n * 1_000_000n;
/** The contract's longest window. */
const PIECE_MICROS = 31n * DAY_MICROS;
/** How far back a resume starts before the last stored record, by default: some channels record late. */
export const RESUME_OVERLAP_MINUTES = 5;

export interface SyncOptions extends ClientOptions {
  /** Where to start when the sink holds nothing (ISO 8601 or a date). */
  since: string;
  /** Where to stop (default now). */
  until?: string;
  kinds?: ExportKind[];
  /**
   * How far back a resume starts before the last stored record, in minutes (default
   * RESUME_OVERLAP_MINUTES): wider where messages may be recorded long after they happened (Meta
   * redelivers notifications held by an outage for up to 7 days).
   */
  overlapMinutes?: number;
  sink: Sink;
  /** Progress: the kind, the time covered so far and the whole span, in microseconds, and records stored. */
  onProgress?: (p: { kind: ExportKind; done: number; total: number; records: number }) => void;
}

export interface SyncResult {
  kind: ExportKind;
  from: string;
  stored: number;
  skipped: number;
  pages: number;
}

/**
 * Copies a business's messages and events into a sink as the contract's incremental sync asks:
 * from the last stored created_at minus a few minutes (else from `since`), in 31-day pieces, cursor
 * paging, skipping ids already held. Messages and events run side by side: their limits are apart.
 */
export async function runSync(options: SyncOptions): Promise<SyncResult[]> {
  const client = new ExportClient(options);
  const until = options.until ? parseInstant(options.until, 'until') : parseInstant(new Date().toISOString(), 'until');
  const since = parseInstant(options.since, 'since');
  return Promise.all(
    (options.kinds ?? ['messages', 'events']).map((kind) =>
      syncKind(client, options, kind, since.micros, until.micros),
    ),
  );
}

async function syncKind(
  client: ExportClient,
  options: SyncOptions,
  kind: ExportKind,
  since: bigint,
  until: bigint,
): Promise<SyncResult> {
  const last = await options.sink.lastCreatedAt(kind);
  const overlap = BigInt(options.overlapMinutes ?? RESUME_OVERLAP_MINUTES) * 60_000_000n;
  const resumeAt = last === null ? since : parseInstant(last, 'created_at').micros - overlap;
  const from = resumeAt > since ? resumeAt : since;
  const held = last === null ? new Set<string>() : await options.sink.idsSince(kind, isoFromMicros(from));
  const result: SyncResult = { kind, from: isoFromMicros(from), stored: 0, skipped: 0, pages: 0 };
  const total = Number(until - from);
  for (let start = from; start < until; start += PIECE_MICROS) {
    const end = start + PIECE_MICROS < until ? start + PIECE_MICROS : until;
    for await (const page of client.pages(kind, isoFromMicros(start), isoFromMicros(end))) {
      result.pages++;
      const fresh = page.filter((r) => !held.has(r.id));
      result.skipped += page.length - fresh.length;
      await options.sink.write(kind, fresh);
      result.stored += fresh.length;
      const reached = page.length > 0 ? parseInstant(page[page.length - 1].created_at, 'created_at').micros : start;
      options.onProgress?.({ kind, done: Number(reached - from), total, records: result.stored });
    }
    options.onProgress?.({ kind, done: Number(end - from), total, records: result.stored });
  }
  return result;
}
