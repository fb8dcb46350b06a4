import type { ChannelProvider, OutboundContent } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import type { JobHandler, JobOutcome } from '../../jobs/outbox.worker.ts';
import { ChannelPacer } from './channel-pacer.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';
import { Batcher } from '../../lib/batcher.ts';
import { sendingRepository as repo, type MessageKey, type OutboundMessage } from './sending.repository.ts';

const keyOf = (ref: MessageKey) => `${ref.businessId}:${ref.id}`;

/** How long a "call started" or SENT mark waits for others to share its statement (ms). */
const MARK_GATHER_MS = 5;

/** Stored on a message whose provider call may or may not have happened. */
export const OUTCOME_UNKNOWN = 'outcome unknown: the service stopped during the provider call; not resent';

export interface SendJobOptions {
  /**
   * Sends in flight at once in this process (default 128). A send is in hand for its read, its turn
   * on the channel, two marks that gather for MARK_GATHER_MS and the provider call. At 1 000
   * sends/s on 2 cores that averaged about 67 ms, so 64 slots held a channel paced at 1 000/s to
   * 950-956/s (docs/PERFORMANCE.md#sends-in-hand).
   */
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
  // The message reads, the "call started" marks and the SENT marks of the jobs running at the same
  // time share statements (one round trip per batch instead of per message; one batch of each in
  // flight while the next gathers); each write is still committed before the job goes on. Reads
  // gather for one event-loop turn (the jobs of one claim arrive together). Marks gather for
  // MARK_GATHER_MS: the pacer spreads the calls of a busy number a millisecond or less apart, so
  // a turn holds one or two of them and a statement per call cost more than the call (measured
  // at 1 000 sends/s: 1.03 mark statements per send when they gathered for one turn).
  private readonly reads = new Batcher<MessageKey, OutboundMessage | undefined>(
    async (refs) => {
      const rows = await repo.outboundMessages(this.db, refs);
      return refs.map((ref) => rows.get(keyOf(ref)));
    },
    { maxRunning: 1, maxItems: 100, gatherMs: 0 },
  );
  // Never thrown as a batch: when the statement's outcome is unknown, marking each again alone
  // would find it marked and leave it PENDING for good; the job fails instead and its next try
  // finds the mark (outcome unknown, never resent).
  private readonly starts = new Batcher<MessageKey, boolean | { error: unknown }>(
    async (refs) => {
      try {
        const started = await repo.startCalls(this.db, refs);
        return refs.map((ref) => started.has(keyOf(ref)));
      } catch (error) {
        return refs.map(() => ({ error }));
      }
    },
    { maxRunning: 1, maxItems: 100, gatherMs: MARK_GATHER_MS },
  );
  // The SENT mark completes the outbox job in the same statement (see markSentMany).
  private readonly sents = new Batcher<MessageKey & { providerMessageId: string; jobId: string }, true>(
    async (items) => {
      await repo.markSentMany(this.db, items);
      return items.map(() => true as const);
    },
    { maxRunning: 1, maxItems: 100, gatherMs: MARK_GATHER_MS },
  );

  constructor(
    private readonly db: Db,
    private readonly channels: {
      findForSending(businessId: string, id: string): Promise<ChannelRow | undefined>;
      providerFor(channel: ChannelRow): ChannelProvider;
    },
    private readonly pacer = new ChannelPacer(),
    options: SendJobOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 128;
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
    if (message.provider_call_at !== null) return this.fail(job, OUTCOME_UNKNOWN);

    const channel = message.channel_id ? await this.channels.findForSending(businessId, message.channel_id) : undefined;
    if (!channel) return this.fail(job, 'the channel of this message no longer exists');
    let provider: ChannelProvider;
    try {
      provider = this.channels.providerFor(channel);
    } catch (err) {
      return this.fail(job, `the channel cannot send: ${(err as Error).message}`);
    }

    // Far back in the channel's line: give the worker slot back instead of holding it (not an attempt).
    const backlog = this.pacer.backlogMs(channel.id, channel.pace_per_second);
    if (backlog > this.options.maxPaceWaitMs)
      return { retryInSeconds: backlog / 1000, error: 'waiting for the channel pace' };
    await this.pacer.acquire(channel.id, channel.pace_per_second);

    // The turn is taken before the mark (a crash while waiting for it leaves the message to be sent
    // later). The shared mark releases the calls of several turns at once, so admit() spreads them
    // out again right before the call (see ChannelPacer); its wait is about one statement's time,
    // and a crash within it counts as a crash during the call (outcome unknown, not resent).
    const started = await this.starts.submit({ businessId, id: message.id });
    if (typeof started === 'object') throw started.error;
    if (!started) return { done: true };
    await this.pacer.admit(channel.id, channel.pace_per_second);
    try {
      const result = await provider.send({
        to: message.recipient_address ?? '',
        content: message.outbound_content as OutboundContent,
        reference: message.id,
      });
      await this.sents.submit({
        businessId,
        id: message.id,
        providerMessageId: result.providerMessageId,
        jobId: job.id,
      });
      return { done: true, recorded: true };
    } catch (err) {
      const failure = provider.classifyError(err);
      const detail = `${failure.code}: ${failure.detail}`;
      // No answer to a request that may have arrived: as a crash during the call, never resent.
      if (failure.mayHaveArrived) return this.fail(job, `outcome unknown: ${detail}; not resent`);
      const attempt = message.send_attempts + 1;
      if (!failure.retryable || attempt >= this.options.maxAttempts) return this.fail(job, detail);
      const retryInSeconds = this.backoff(attempt);
      // The message waits for its next attempt exactly when its job does (one commit).
      await this.db.transaction().execute(async (trx) => {
        await repo.endCall(trx, businessId, message.id, detail);
        await outboxRepository.retryAt(trx, job, retryInSeconds, detail);
      });
      return { retryInSeconds, error: detail, recorded: true };
    }
  }

  /**
   * A send whose worker stopped: if its provider call had not started, it is sent again; if it had,
   * the provider may have the message, so it is marked ERROR and never resent (in the transaction
   * that fails the job).
   */
  async onAbandoned(job: OutboxJob, trx: Db): Promise<'retry' | 'give_up'> {
    const message = await repo.outboundMessage(trx, job.business_id, job.ref_id);
    if (!message || message.status !== 'PENDING' || message.provider_call_at === null) return 'retry';
    await repo.markError(trx, job.business_id, message.id, OUTCOME_UNKNOWN);
    return 'give_up';
  }

  private backoff(attempt: number): number {
    const { baseDelaySeconds, maxDelaySeconds } = this.options;
    const delay = Math.min(maxDelaySeconds, baseDelaySeconds * 2 ** (attempt - 1));
    return delay * (0.8 + Math.random() * 0.4);
  }

  /** The message is marked ERROR exactly when its job fails (one commit). */
  private async fail(job: OutboxJob, detail: string): Promise<JobOutcome> {
    await this.db.transaction().execute(async (trx) => {
      await repo.markError(trx, job.business_id, job.ref_id, detail);
      await outboxRepository.fail(trx, job, detail);
    });
    return { failed: detail, recorded: true };
  }
}
