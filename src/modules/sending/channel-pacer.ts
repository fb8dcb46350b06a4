const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Lane {
  /** The last grant in line; the next waits for it, so grants of a channel are handed out in order. */
  tail: Promise<void>;
  waiting: number;
  tokens: number;
  refilledAt: number;
}

/**
 * Paces the provider calls of each channel with a token bucket filled at the channel's pace
 * (messages per second) and holding at most max(1, pace/100) tokens: any one-second window sees at
 * most pace + that many calls, and a late timer never lets a burst catch up. Tokens are taken when
 * the call is about to start, measured on the real clock.
 *
 * Pacing lives in this process: several processes sending from one number each get the full pace
 * (run one sending process per number, or lower the channel's pace, when that matters).
 */
export class ChannelPacer {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Roughly how long a new caller would wait for the channel's next token (ms). */
  backlogMs(channelId: string, perSecond: number): number {
    const lane = this.lanes.get(channelId);
    return lane ? (lane.waiting * 1000) / perSecond : 0;
  }

  /** Resolves when the caller may start one call on the channel. */
  acquire(channelId: string, perSecond: number): Promise<void> {
    const lane = this.lane(channelId, perSecond);
    lane.waiting++;
    const turn = lane.tail.then(() => this.take(lane, perSecond)).finally(() => lane.waiting--);
    lane.tail = turn;
    return turn;
  }

  private lane(channelId: string, perSecond: number): Lane {
    let lane = this.lanes.get(channelId);
    if (!lane) {
      lane = { tail: Promise.resolve(), waiting: 0, tokens: capacity(perSecond), refilledAt: this.now() };
      this.lanes.set(channelId, lane);
    }
    return lane;
  }

  private async take(lane: Lane, perSecond: number): Promise<void> {
    for (;;) {
      const now = this.now();
      lane.tokens = Math.min(capacity(perSecond), lane.tokens + ((now - lane.refilledAt) * perSecond) / 1000);
      lane.refilledAt = now;
      if (lane.tokens >= 1) {
        lane.tokens -= 1;
        return;
      }
      await sleep(((1 - lane.tokens) * 1000) / perSecond);
    }
  }
}

/** Burst allowance: one call at ordinary paces, 1 % of the pace at high ones (timer granularity). */
const capacity = (perSecond: number) => Math.max(1, Math.floor(perSecond / 100));
