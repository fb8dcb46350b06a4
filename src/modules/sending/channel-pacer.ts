import type { ChannelPaceStore, PacedChannel } from './channel-pace.store.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A token bucket whose callers are served in order (each waits for the one before). */
interface Bucket {
  tail: Promise<void>;
  tokens: number;
  refilledAt: number;
}

interface Lane {
  /** Callers of acquire() not yet served. */
  waiting: number;
  /** Tokens of acquire(). */
  grants: Bucket;
  /** Tokens of admit(). */
  starts: Bucket;
  /** Start times of the latest calls: a ring of up to `pace` entries, the oldest at `oldest`. */
  recent: number[];
  oldest: number;
}

/**
 * Paces the provider calls of each channel, on the real clock: never more than `pace` calls
 * (messages per second) start within any window of one second plus one interval (1/pace s), so a
 * call that reaches the provider up to one interval late or early does not put pace + 1 into a
 * second there. The sustained rate is thus pace²/(pace + 1): 79/s at 80, 999/s at 1000.
 * Two steps, each a token bucket filled at that rate and holding at most max(1, pace/100) tokens
 * (so a late timer never lets a burst catch up):
 *
 * - acquire(): the caller's turn, taken before it opens its connection to the provider (a job far
 *   back in the line gives its slot back instead: backlogMs).
 * - admit(): once the connection is open, right before the call records that it starts (send.job.ts):
 *   connecting takes each call its own time (a new TLS handshake or a reused connection), so the
 *   second bucket spreads the calls out again, and holds any call that would make more than `pace`
 *   calls start within the window (sliding, over the latest starts).
 *
 * Both waits come before the record, so a crash during either leaves a message that is sent again.
 *
 * With a shared store (`shared`: Redis, or PostgreSQL's `channel_paces`), acquire() also takes the
 * caller's turn there, at the same rate, so the processes sending from one number share its pace:
 * each turn is one round trip to the store. A turn further than the caller wants to wait is not
 * taken (the job goes back to the queue). admit() still spreads the calls of this process only.
 */
export class ChannelPacer {
  private readonly lanes = new Map<string, Lane>();
  private readonly now: () => number;
  private readonly shared: ChannelPaceStore | undefined;

  constructor(options: { shared?: ChannelPaceStore; now?: () => number } = {}) {
    this.now = options.now ?? (() => performance.now());
    this.shared = options.shared;
  }

  /** Roughly how long a new caller would wait for the channel's next turn (ms). */
  backlogMs(channelId: string, perSecond: number): number {
    const lane = this.lanes.get(channelId);
    return lane ? (lane.waiting * 1000) / rateOf(perSecond) : 0;
  }

  /**
   * Resolves when it is the caller's turn to prepare one call on the channel, to 0; or, when the
   * shared store's turn is over `maxWaitMs` away, at once to how far away it is (nothing taken).
   * The store keys the channel by its business too (`businessId`, given with a store).
   */
  async acquire(
    channelId: string,
    perSecond: number,
    shared: { businessId?: string; maxWaitMs?: number } = {},
  ): Promise<number> {
    const lane = this.lane(channelId, perSecond);
    const paced: PacedChannel = { businessId: shared.businessId ?? '', id: channelId };
    const maxWaitMs = shared.maxWaitMs ?? 3_600_000;
    lane.waiting++;
    let wait = 0;
    let refused: number | undefined;
    try {
      await this.inTurn(lane.grants, async () => {
        await this.take(lane.grants, perSecond);
        if (!this.shared) return;
        const turn = await this.shared.take(paced, 1000 / rateOf(perSecond), capacity(perSecond), maxWaitMs);
        if (turn.granted) wait = turn.waitMs;
        else {
          // The local token goes back: this caller makes no call now.
          lane.grants.tokens = Math.min(capacity(perSecond), lane.grants.tokens + 1);
          refused = turn.waitMs;
        }
      });
    } finally {
      lane.waiting--;
    }
    // Waited outside the lane's turn: the next caller of this process takes its own shared turn meanwhile.
    if (refused !== undefined) return refused;
    if (wait > 0) await sleep(wait);
    return 0;
  }

  /** Resolves when the caller may start its call (see the class); counts the start. */
  admit(channelId: string, perSecond: number): Promise<void> {
    const lane = this.lane(channelId, perSecond);
    return this.inTurn(lane.starts, async () => {
      await this.take(lane.starts, perSecond);
      await this.startWithinWindow(lane, perSecond);
    });
  }

  private lane(channelId: string, perSecond: number): Lane {
    let lane = this.lanes.get(channelId);
    if (!lane) {
      const bucket = (): Bucket => ({ tail: Promise.resolve(), tokens: capacity(perSecond), refilledAt: this.now() });
      lane = { waiting: 0, grants: bucket(), starts: bucket(), recent: [], oldest: 0 };
      this.lanes.set(channelId, lane);
    }
    return lane;
  }

  private inTurn(bucket: Bucket, work: () => Promise<void>): Promise<void> {
    const turn = bucket.tail.then(work);
    bucket.tail = turn;
    return turn;
  }

  private async take(bucket: Bucket, perSecond: number): Promise<void> {
    for (;;) {
      const now = this.now();
      bucket.tokens = Math.min(
        capacity(perSecond),
        bucket.tokens + ((now - bucket.refilledAt) * rateOf(perSecond)) / 1000,
      );
      bucket.refilledAt = now;
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return;
      }
      await sleep(((1 - bucket.tokens) * 1000) / rateOf(perSecond));
    }
  }

  /** Waits until fewer than `perSecond` calls started within the last window, and records this start. */
  private async startWithinWindow(lane: Lane, perSecond: number): Promise<void> {
    const size = Math.max(1, Math.floor(perSecond));
    if (lane.recent.length > size) {
      // The pace was lowered: keep the latest `size` starts, oldest first.
      lane.recent = [...lane.recent.slice(lane.oldest), ...lane.recent.slice(0, lane.oldest)].slice(-size);
      lane.oldest = 0;
    }
    if (lane.recent.length < size) {
      // Not full yet: the newest entry goes just before the oldest (the end of the ring).
      lane.recent.splice(lane.oldest, 0, this.now());
      lane.oldest = (lane.oldest + 1) % lane.recent.length;
      return;
    }
    for (;;) {
      const wait = lane.recent[lane.oldest] + windowMs(perSecond) - this.now();
      if (wait <= 0) break;
      await sleep(wait);
    }
    lane.recent[lane.oldest] = this.now();
    lane.oldest = (lane.oldest + 1) % size;
  }
}

/** The window in which at most `pace` calls start: one second plus one interval. */
const windowMs = (perSecond: number) => 1000 + 1000 / perSecond;
/** Calls per second the buckets let through: `pace` per window. */
const rateOf = (perSecond: number) => (perSecond * 1000) / windowMs(perSecond);
/** Burst allowance: one call at ordinary paces, 1 % of the pace at high ones (timer granularity). */
const capacity = (perSecond: number) => Math.max(1, Math.floor(perSecond / 100));
