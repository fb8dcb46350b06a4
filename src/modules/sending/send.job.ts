import type { ChannelProvider, OutboundContent } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import type { OutboxJob } from '../../jobs/outbox.repository.ts';
import type { JobHandler, JobOutcome } from '../../jobs/outbox.worker.ts';
import { ChannelPacer } from './channel-pacer.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';
import { Batcher } from '../messaging/batcher.ts';
import { sendingRepository as repo, type MessageKey } from './sending.repository.ts';

/** How long a channel row read by the worker is reused: a re-pace or a secret rotation applies within this. */
const CHANNEL_CACHE_MS = 1000;

const keyOf = (ref: MessageKey) => `${ref.businessId}:${ref.id}`;

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
  // The message reads and the SENT marks of the jobs running at the same time share statements (one
  // round trip per batch instead of per message); each write is still committed before the job goes on.
  private readonly reads = new Batcher<MessageKey, Awaited<ReturnType<typeof repo.outboundMessage>>>(
    async (refs) => {
      const rows = await repo.outboundMessages(this.db, refs);
      return refs.map((ref) => rows.get(keyOf(ref)));
    },
    { maxRunning: 2, maxItems: 100 },
  );
  private readonly sents = new Batcher<MessageKey & { providerMessageId: string }, true>(
    async (items) => {
      await repo.markSentMany(this.db, items);
      return items.map(() => true as const);
    },
    { maxRunning: 2, maxItems: 100 },
  );
  private readonly channelCache = new Map<string, { row: ChannelRow | undefined; at: number }>();

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
    const message = await this.reads.submit({ businessId, id: job.ref_id });
    if (!message || message.status !== 'PENDING') return { done: true };
    // A previous call's outcome was never recorded (the worker stopped, or the database failed after it).
    if (message.provider_call_at !== null) return this.fail(businessId, message.id, OUTCOME_UNKNOWN);

    const channel = message.channel_id ? await this.channel(businessId, message.channel_id) : undefined;
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

    // Not batched: a shared statement would release the calls of several tokens at once (bursts
    // above the pace at the provider); the token is taken just before this single round trip.
    if (!(await repo.startCall(this.db, businessId, message.id))) return { done: true };
    try {
      const result = await provider.send({ to: message.recipient_address ?? '', content: message.outbound_content as OutboundContent });
      await this.sents.submit({ businessId, id: message.id, providerMessageId: result.providerMessageId });
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

  /** The channel row, reused for CHANNEL_CACHE_MS (every send of a busy channel would read it). */
  private async channel(businessId: string, id: string): Promise<ChannelRow | undefined> {
    const key = `${businessId}:${id}`;
    const cached = this.channelCache.get(key);
    if (cached && performance.now() - cached.at < CHANNEL_CACHE_MS) return cached.row;
    const row = await this.channels.find(businessId, id);
    if (this.channelCache.size > 10_000) this.channelCache.clear();
    this.channelCache.set(key, { row, at: performance.now() });
    return row;
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
