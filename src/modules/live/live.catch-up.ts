import type { Db } from '../../db/database.ts';
import { domainEventsRepository } from '../domain-events/domain-events.repository.ts';
import { liveEvent, type LiveEvent } from './live.events.ts';

/** Why a stream tells its client to reload its views instead of catching it up. */
export type ResetReason =
  /** Events after the client's last one may have been deleted (older than the dispatcher keeps them). */
  | 'expired'
  /** More events were missed than a catch-up sends: reloading is cheaper. */
  | 'too_many'
  /** The id names no event of this database (another install, a restored backup). */
  | 'unknown';

/**
 * What a (re)connecting stream sends first: the events the client missed, or a reset; `head` is
 * the position the stream starts from (the newest event kept when it was read).
 */
export type CatchUp = { events: LiveEvent[]; head: number } | { reset: ResetReason; head: number };

export interface CatchUpOptions {
  /** Most missed events sent (default 500); past it, a reset. */
  limit?: number;
  /**
   * How long a transaction that writes domain events may run (0 on the embedded engine, where
   * transactions run one at a time). An event whose transaction drew a smaller id than the
   * client's last one and committed after it is sent again with the events after it; the client
   * recognises the ones it has by id.
   */
  lateCommitMs: number;
}

/** The events before the client's last one searched for such late commits. */
const LATE_SCAN = 100;

/**
 * Reads what a dashboard missed from the `domain_events` table, which keeps events for a while after
 * they are handed over (DomainEventDispatcher's keepMs, 3 days): the business's events after the
 * client's last id, never another business's.
 */
export class LiveCatchUp {
  private readonly limit: number;

  constructor(
    private readonly db: Db,
    private readonly options: CatchUpOptions,
  ) {
    this.limit = options.limit ?? 500;
  }

  /** From `afterId` (the client's Last-Event-ID), or, without one, nothing: only the position. */
  async read(businessId: string, afterId: number | undefined): Promise<CatchUp> {
    const { oldest, newest, lastDrawn } = await domainEventsRepository.bounds(this.db);
    const head = newest ?? lastDrawn;
    if (afterId === undefined) return { events: [], head };
    if (afterId > lastDrawn) return { reset: 'unknown', head };
    // Ids are drawn in order and deleted oldest first: below the oldest kept, some may be gone.
    if (afterId < (oldest ?? lastDrawn + 1) - 1) return { reset: 'expired', head };
    const after = await domainEventsRepository.ofBusinessAfter(this.db, businessId, afterId, this.limit + 1);
    if (after.length > this.limit) return { reset: 'too_many', head };
    const late =
      this.options.lateCommitMs > 0 && afterId > 0
        ? await domainEventsRepository.ofBusinessJustBefore(
            this.db,
            businessId,
            afterId,
            this.options.lateCommitMs,
            LATE_SCAN,
          )
        : [];
    const events = [...late, ...after].map(liveEvent);
    return { events, head: Math.max(head, events.at(-1)?.id ?? 0) };
  }
}
