import type { Engine } from './database.ts';

/**
 * The most work one transaction or statement of a long operation (a notification of thousands of
 * messages or receipts, an import) carries, per engine. Long work is cut into slices of these sizes
 * and each slice commits on its own, so the other callers of the database get their turn between two
 * slices instead of after the whole operation.
 *
 * On the embedded engine that turn is the only one there is: PGlite is one session, its pool holds
 * one client (database.ts), and a transaction owns it until it ends, so every request waits behind
 * whatever holds it. The pool hands the client to its waiters in the order they asked (pg-pool's
 * queue is first in, first out), so a request waits for at most the slice running when it asked:
 * a slice must stay a few tens of milliseconds on a small machine (docs/PERFORMANCE.md#api-latency-during-long-work).
 * A PostgreSQL server runs other connections beside a long transaction, so there the slices are
 * larger, sized for throughput; they still bound how long a notification holds its senders' locks.
 */
export interface SliceSizes {
  /** Inbound messages and receipts in one transaction (a notification's slice, or notifications batched together). */
  inboundItems: number;
  /** Rows of one table in one import statement (and its domain events, in the same transaction). */
  importRows: number;
  /**
   * Messages and events a merge moves from the contact it hid to the survivor in one transaction:
   * on PGlite 200 of them cost about 20 ms of CPU, each row a new entry in every index of its table
   * (bench/contact-merge.bench.ts).
   */
  mergeRows: number;
}

const SIZES: Record<Engine, SliceSizes> = {
  pglite: { inboundItems: 50, importRows: 250, mergeRows: 200 },
  postgres: { inboundItems: 200, importRows: 1000, mergeRows: 5000 },
};

export function sliceSizes(engine: Engine): SliceSizes {
  return SIZES[engine];
}

/** `items` cut into consecutive runs of at most `size` (one run when they fit in one). */
export function inSlices<T>(items: readonly T[], size: number): T[][] {
  if (items.length <= size) return [items.slice()];
  const slices: T[][] = [];
  for (let i = 0; i < items.length; i += size) slices.push(items.slice(i, i + size));
  return slices;
}

const waiting: (() => void)[] = [];
let scheduled = false;

function releaseOne(): void {
  scheduled = false;
  waiting.shift()?.();
  // The next one is released on a later turn, after that turn's poll phase has read the requests:
  // a timer set now would already be due when this slice ends, and run in this same timers phase.
  if (waiting.length > 0) setImmediate(schedule);
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setTimeout(releaseOne, 0);
}

/**
 * Waits for a turn of the event loop of its own. On the embedded engine a statement runs in this
 * thread and its answer comes back as a promise, so a chain of statements never leaves the microtask
 * queue: requests that arrived meanwhile are not even read until it ends. Long work awaits this
 * before each slice, so the requests that came in are read, and run their statements, first; and
 * one slice runs per turn, whichever long work it belongs to (an import beside a notification), so a
 * request waits for one slice at most. A timer rather than setImmediate: the shared lookups start on
 * setImmediate (prepared-queries.ts), and a request read in a turn's poll phase runs them in its check
 * phase, which comes before the next turn's timers. When nothing else waits, this costs the timer's
 * millisecond. (Every PGlite call deferred to the next turn made the short lookups slower:
 * docs/PERFORMANCE-CHOICES.md#tried-and-not-kept.)
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}
