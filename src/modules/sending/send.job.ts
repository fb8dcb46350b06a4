import type { ChannelProvider, OutboundContent } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import type { OutboxJob } from '../../jobs/outbox.repository.ts';
import type { JobHandler, JobOutcome } from '../../jobs/outbox.worker.ts';
import { ChannelPacer } from './channel-pacer.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';
import { sendingRepository as repo } from './sending.repository.ts';

/** Stored on a message whose provider call may or may not have happened. */
export const OUTCOME_UNKNOWN = 'outcome unknown: the service stopped during the provider call; not resent';

export interface SendJobOptions {
  /** Sends in flight at once in this process (default 64). */
  concurrency?: number;
  /** Provider calls per message before it is marked ERROR (default 10). */
  maxAttempts?: number;
  /** Retry delays double from this (default 1 s) up to `maxDelaySeconds` (default 300), with ±20 % jitter. */
  baseDelaySeconds?: number;
  maxDelaySeconds?: number;
  /** A job whose turn on the channel is further away than this goes back to the queue (default 1000 ms). */
  maxPaceWaitMs?: number;
}

/**
 * Delivers queued outbound messages to their channel's provider, at most once each: the claim and a
 * "call started" mark are committed before the provider is called, and a job abandoned with that
 * mark set is given up (ERROR, outcome unknown) rather than sent again. A job abandoned before the
 * mark is sent normally. Retryable failures come back with exponential backoff and jitter.
 */
export class SendJobHandler implements JobHandler {
  readonly kind = 'send';
  readonly concurrency: number;
  // Covers the longest pacing wait (maxPaceWaitMs) plus the provider's call limit (15 s) many times over.
  readonly leaseSeconds = 120;
  private readonly options: Required<Omit<SendJobOptions, 'concurrency'>>;

  constructor(
    private readonly db: Db,
    private readonly channels: {
      find(businessId: string, id: string): Promise<ChannelRow | undefined>;
      providerFor(channel: ChannelRow): ChannelProvider;
    },
    private readonly pacer = new ChannelPacer(),
    options: SendJobOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 64;
    this.options = {
      maxAttempts: options.maxAttempts ?? 10,
      baseDelaySeconds: options.baseDelaySeconds ?? 1,
      maxDelaySeconds: options.maxDelaySeconds ?? 300,
      maxPaceWaitMs: options.maxPaceWaitMs ?? 1000,
    };
  }

  async handle(job: OutboxJob): Promise<JobOutcome> {
    const businessId = job.business_id;
    const message = await repo.outboundMessage(this.db, businessId, job.ref_id);
    if (!message || message.status !== 'PENDING') return { done: true };
    // A previous call's outcome was never recorded (the worker stopped, or the database failed after it).
    if (message.provider_call_at !== null) return this.fail(businessId, message.id, OUTCOME_UNKNOWN);

    const channel = message.channel_id ? await this.channels.find(businessId, message.channel_id) : undefined;
    if (!channel) return this.fail(businessId, message.id, 'the channel of this message no longer exists');
    let provider: ChannelProvider;
    try {
      provider = this.channels.providerFor(channel);
    } catch (err) {
      return this.fail(businessId, message.id, `the channel cannot send: ${(err as Error).message}`);
    }

    // Far back in the channel's line: give the worker slot back instead of holding it (not an attempt).
    const backlog = this.pacer.backlogMs(channel.id, channel.pace_per_second);
    if (backlog > this.options.maxPaceWaitMs) return { retryInSeconds: backlog / 1000, error: 'waiting for the channel pace' };
    await this.pacer.acquire(channel.id, channel.pace_per_second);

    if (!(await repo.startCall(this.db, businessId, message.id))) return { done: true };
    try {
      const result = await provider.send({ to: message.recipient_address ?? '', content: message.outbound_content as OutboundContent });
      await repo.markSent(this.db, businessId, message.id, result.providerMessageId);
      return { done: true };
    } catch (err) {
      const failure = provider.classifyError(err);
      const detail = `${failure.code}: ${failure.detail}`;
      const attempt = message.send_attempts + 1;
      if (!failure.retryable || attempt >= this.options.maxAttempts) return this.fail(businessId, message.id, detail);
      await repo.endCall(this.db, businessId, message.id, detail);
      return { retryInSeconds: this.backoff(attempt), error: detail };
    }
  }

  /**
   * A send whose worker stopped: if its provider call had not started, it is sent again; if it had,
   * the provider may have the message, so it is marked ERROR and never resent.
   */
  async onAbandoned(job: OutboxJob): Promise<'retry' | 'give_up'> {
    const message = await repo.outboundMessage(this.db, job.business_id, job.ref_id);
    if (!message || message.status !== 'PENDING' || message.provider_call_at === null) return 'retry';
    await repo.markError(this.db, job.business_id, message.id, OUTCOME_UNKNOWN);
    return 'give_up';
  }

  private backoff(attempt: number): number {
    const { baseDelaySeconds, maxDelaySeconds } = this.options;
    const delay = Math.min(maxDelaySeconds, baseDelaySeconds * 2 ** (attempt - 1));
    return delay * (0.8 + Math.random() * 0.4);
  }

  private async fail(businessId: string, messageId: string, detail: string): Promise<JobOutcome> {
    await repo.markError(this.db, businessId, messageId, detail);
    return { failed: detail };
  }
}
