/** Where channel failures are reported: the app's logger (pino's signature). */
export interface ChannelFailureLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

interface Streak {
  since: number;
  failures: number;
}

/**
 * Tells the operator when a channel's sends start failing and when they go through again: one
 * `warn` at the first failed attempt of a streak and one `info` at the next accepted send, whatever
 * the number of retries in between (a provider out of reach fails every attempt of every message
 * for minutes). Kept per process: each process that sends on the channel reports what it sees.
 * The lines carry the failure's code and stored detail, never the channel's configuration.
 */
export class ChannelFailures {
  private readonly streaks = new Map<string, Streak>();

  constructor(
    private readonly log: ChannelFailureLog | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  failed(channel: { id: string; business_id: string }, failure: { code: string; detail: string }): void {
    const streak = this.streaks.get(channel.id);
    if (streak) {
      streak.failures++;
      return;
    }
    this.streaks.set(channel.id, { since: this.now(), failures: 1 });
    this.log?.warn(
      { businessId: channel.business_id, channelId: channel.id, code: failure.code, error: failure.detail },
      'sends on a channel are failing',
    );
  }

  succeeded(channel: { id: string; business_id: string }): void {
    const streak = this.streaks.get(channel.id);
    if (!streak) return;
    this.streaks.delete(channel.id);
    this.log?.info(
      {
        businessId: channel.business_id,
        channelId: channel.id,
        failedAttempts: streak.failures,
        failingForMs: this.now() - streak.since,
      },
      'sends on a channel go through again',
    );
  }
}
