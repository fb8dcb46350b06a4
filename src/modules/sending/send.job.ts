import type { ChannelProvider, ErrorClassification, OutboundContent, SendThread } from '../../channels/provider.ts';
import { channelKind } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import type { JobHandler, JobOutcome } from '../../jobs/outbox.worker.ts';
import { ChannelPacer } from './channel-pacer.ts';
import type { ChannelRow } from '../channels/channels.repository.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { messageStatusesChanged } from '../domain-events/domain-events.writer.ts';
import { Batcher } from '../../lib/batcher.ts';
import { ChannelFailures, type ChannelFailureLog } from './channel-failures.ts';
import { recordChannelOptOut } from '../contacts/channel-opt-outs.ts';
import {
  messageStatusRepository as repo,
  type MessageKey,
  type SendableMessage,
} from '../messages/message-status.repository.ts';

const keyOf = (ref: MessageKey) => `${ref.businessId}:${ref.id}`;

/** How long a "call started" or SENT mark waits for others to share its statement (ms). */
const MARK_GATHER_MS = 5;

/** Stored on a message whose provider call may or may not have happened. */
export const OUTCOME_UNKNOWN = 'outcome unknown: the service stopped during the provider call; not resent';

/** What the send job works with. */
export interface SendJobDeps {
  db: Db;
  channels: {
    findForSending(businessId: string, id: string): Promise<ChannelRow | undefined>;
    providerFor(channel: ChannelRow): ChannelProvider;
    /** The provider refused the channel's credentials: it shows as needing new ones. */
    credentialsRejected?(channel: ChannelRow): Promise<void>;
  };
  pacer?: ChannelPacer;
  /** Where a channel whose sends fail is reported (ChannelFailures). */
  log?: ChannelFailureLog;
  /** Told after a status move commits, so its `message_status_changed` is handed over at once. */
  domainEvents?: Pick<DomainEventDispatcher, 'dispatch'>;
}

/** The hook refused the write: the message was no longer waiting, or the start could not be recorded. */
class CallNotStarted extends Error {}

export interface SendJobOptions {
  /**
   * Sends in flight at once in this process (default 128). A send is in hand for its read, its turn
   * on the channel, two marks that gather for MARK_GATHER_MS and the provider call. At 1 000
   * sends/s on 2 cores that averaged about 67 ms, so 64 slots held a channel paced at 1 000/s to
   * 950-956/s (docs/PERFORMANCE-CHOICES.md#sends-in-hand).
   */
  concurrency?: number;
  /**
   * Attempts per message before it is marked ERROR (default 10): its provider calls, and the tries
   * that failed before their request was written.
   */
  maxAttempts?: number;
  /** Retry delays double from this (default 1 s) up to `maxDelaySeconds` (default 300), with ±20 % jitter. */
  baseDelaySeconds?: number;
  maxDelaySeconds?: number;
  /** A job whose turn on the channel is further away than this goes back to the queue (default 1000 ms). */
  maxPaceWaitMs?: number;
}

/**
 * Delivers queued outbound messages to their channel's provider, at most once each: the claim and a
 * "call started" mark are committed before the request is written, and a job abandoned with that
 * mark set is given up (ERROR, outcome unknown) rather than sent again. The mark is taken at the
 * last moment (the adapter's `beforeSend`: connection open, turn on the channel taken), so a send
 * abandoned before it (a name that does not resolve, a refused or slow connection, a pacing wait,
 * the process killed meanwhile) provably never left and is sent normally. Retryable failures come
 * back with exponential backoff and jitter. Every status move (SENT, ERROR) writes its
 * `message_status_changed` in the commit that makes it.
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
  private readonly reads = new Batcher<MessageKey, SendableMessage | undefined>(
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
  // The SENT marks complete their outbox jobs in the same transaction (a job is done exactly when its
  // message's outcome is stored), and the messages they moved get their domain events in it too.
  private readonly sents = new Batcher<MessageKey & { providerMessageId: string; jobId: string }, true>(
    async (items) => {
      const moved = await this.db.transaction().execute(async (trx) => {
        const moved = await repo.markSent(trx, items);
        await outboxRepository.completeMany(
          trx,
          items.map((item) => ({ businessId: item.businessId, id: item.jobId })),
        );
        await statusMoves(trx, moved, 'SENT');
        return moved;
      });
      if (moved.length > 0) this.statusMoved();
      return items.map(() => true as const);
    },
    { maxRunning: 1, maxItems: 100, gatherMs: MARK_GATHER_MS },
  );
  private readonly db: Db;
  private readonly channels: SendJobDeps['channels'];
  private readonly pacer: ChannelPacer;
  private readonly failures: ChannelFailures;

  constructor(
    private readonly deps: SendJobDeps,
    options: SendJobOptions = {},
  ) {
    this.db = deps.db;
    this.channels = deps.channels;
    this.pacer = deps.pacer ?? new ChannelPacer();
    this.failures = new ChannelFailures(deps.log);
    this.concurrency = options.concurrency ?? 128;
    this.options = {
      maxAttempts: options.maxAttempts ?? 10,
      baseDelaySeconds: options.baseDelaySeconds ?? 1,
      maxDelaySeconds: options.maxDelaySeconds ?? 300,
      maxPaceWaitMs: options.maxPaceWaitMs ?? 1000,
    };
  }

  /** The conversation's thread, for a kind whose sends carry it (capabilities.threads). */
  private async threadOf(message: SendableMessage, channel: ChannelRow): Promise<SendThread | undefined> {
    if (!channelKind(channel.provider_kind)?.capabilities.threads) return undefined;
    const latest = await repo.latestInbound(this.db, message.business_id, message.conversation_id, channel.id);
    if (!latest) return undefined;
    const { subject, references } = latest.metadata;
    return {
      replyToProviderMessageId: latest.provider_message_id,
      references: Array.isArray(references) ? references.filter((r): r is string => typeof r === 'string') : [],
      subject: typeof subject === 'string' ? subject : null,
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
    // The channel's turn shared with other processes is not taken when it is as far away.
    const refused = await this.pacer.acquire(channel.id, channel.pace_per_second, {
      businessId: channel.business_id,
      maxWaitMs: this.options.maxPaceWaitMs,
    });
    if (refused > 0) return { retryInSeconds: refused / 1000, error: 'waiting for the channel pace' };

    // The mark is committed in `beforeSend`, which the adapter calls once its connection is open and
    // before it writes the first byte of the request: everything that can fail without the provider
    // hearing of the message (resolving its name, connecting, the TLS handshake, a connect refused
    // by the address policy) comes before, and so does the turn on the channel (admit(), which
    // spreads out again calls whose turns came together). A crash before the mark's commit leaves a
    // message the provider cannot have, sent again by whoever takes the job over; a crash after it,
    // one that it may have, never sent again. The shared mark releases the calls of several turns
    // together, MARK_GATHER_MS and one statement apart at most: less than one interval at the
    // default pace (80/s: 12.5 ms), while at 1 000/s a second may see a few calls more than the
    // pace reach the provider (whose throughput error is retried).
    const attempt = message.send_attempts + 1;
    let start: Promise<boolean | { error: unknown }> | undefined;
    const beforeSend = async () => {
      await this.pacer.admit(channel.id, channel.pace_per_second);
      start = this.starts.submit({ businessId, id: message.id });
      if ((await start) !== true) throw new CallNotStarted('the call was not started');
    };
    const thread = await this.threadOf(message, channel);
    let providerMessageId: string;
    try {
      const result = await provider.send({
        ...(thread ? { thread } : {}),
        to: message.recipient_address ?? '',
        content: message.outbound_content as OutboundContent,
        ...(message.reply_to_provider_message_id
          ? { replyToProviderMessageId: message.reply_to_provider_message_id }
          : {}),
        reference: message.id,
        beforeSend,
      });
      providerMessageId = result.providerMessageId;
    } catch (err) {
      const started = start ? await start : undefined;
      // Finished or given up meanwhile, or in another worker's call: nothing was written.
      if (started === false) return { done: true };
      const failure: ErrorClassification =
        typeof started === 'object'
          ? {
              retryable: true,
              code: 'internal_error',
              detail: `the start of the call could not be recorded, nothing was sent: ${errorText(started.error)}`,
            }
          : provider.classifyError(err);
      const detail = `${failure.code}: ${failure.detail}`;
      if (typeof started !== 'object') this.failures.failed(channel, { code: failure.code, detail });
      if (failure.credentialsRejected) await this.channels.credentialsRejected?.(channel);
      // The request may have been written (its start was recorded) and no answer came back: as a
      // crash during the call, never resent. Before the start, nothing left, whatever the error.
      if (started === true && failure.mayHaveArrived) return this.fail(job, `outcome unknown: ${detail}; not resent`);
      if (failure.recipientOptedOut && message.contact_id)
        return this.fail(job, detail, attempt, { contactId: message.contact_id, channelType: message.channel });
      if (!failure.retryable || attempt >= this.options.maxAttempts) return this.fail(job, detail, attempt);
      const retryInSeconds = this.backoff(attempt);
      // The message waits for its next attempt exactly when its job does (one commit).
      await this.db.transaction().execute(async (trx) => {
        await repo.endCall(trx, businessId, message.id, detail, attempt);
        await outboxRepository.retryAt(trx, job, retryInSeconds, detail);
      });
      return { retryInSeconds, error: detail, recorded: true };
    }
    // Outside the try: a failure to store the answer is not the provider's; the job comes back and
    // finds the call's mark (outcome unknown, never resent).
    await this.sents.submit({ businessId, id: message.id, providerMessageId, jobId: job.id });
    this.failures.succeeded(channel);
    return { done: true, recorded: true };
  }

  /**
   * A send whose worker stopped: if its provider call had not started, it is sent again; if it had,
   * the provider may have the message, so it is marked ERROR and never resent (in the transaction
   * that fails the job).
   */
  async onAbandoned(job: OutboxJob, trx: Db): Promise<'retry' | 'give_up'> {
    const message = await repo.outboundMessage(trx, job.business_id, job.ref_id);
    if (!message || message.status !== 'PENDING' || message.provider_call_at === null) return 'retry';
    // The worker commits this transaction: its event is handed over at the dispatcher's next poll.
    if (await repo.markError(trx, job.business_id, message.id, OUTCOME_UNKNOWN))
      await statusMoves(trx, [{ businessId: job.business_id, id: message.id }], 'ERROR');
    return 'give_up';
  }

  private backoff(attempt: number): number {
    const { baseDelaySeconds, maxDelaySeconds } = this.options;
    const delay = Math.min(maxDelaySeconds, baseDelaySeconds * 2 ** (attempt - 1));
    return delay * (0.8 + Math.random() * 0.4);
  }

  /**
   * The message is marked ERROR exactly when its job fails, with its status move's domain event (one
   * commit); `attempts` when an attempt ended it. With `optedOut`, the provider said the recipient
   * unsubscribed: the contact is marked opted out of the channel type in the same commit.
   */
  private async fail(
    job: OutboxJob,
    detail: string,
    attempts?: number,
    optedOut?: { contactId: string; channelType: string },
  ): Promise<JobOutcome> {
    const moved = await this.db.transaction().execute(async (trx) => {
      if (optedOut) await recordChannelOptOut(trx, job.business_id, optedOut.contactId, optedOut.channelType);
      const moved = await repo.markError(trx, job.business_id, job.ref_id, detail, attempts);
      if (moved) await statusMoves(trx, [{ businessId: job.business_id, id: job.ref_id }], 'ERROR');
      await outboxRepository.fail(trx, job, detail);
      return moved;
    });
    if (moved) this.statusMoved();
    return { failed: detail, recorded: true };
  }

  /** Hands the committed status moves to their subscribers now rather than at the dispatcher's next poll. */
  private statusMoved(): void {
    void this.deps.domainEvents?.dispatch(['message_status_changed']);
  }
}

/** `message_status_changed` for messages this transaction moved to `status` (one statement per business). */
async function statusMoves(trx: Db, moved: MessageKey[], status: 'SENT' | 'ERROR'): Promise<void> {
  const byBusiness = new Map<string, { id: string; status: string }[]>();
  for (const { businessId, id } of moved) {
    const list = byBusiness.get(businessId) ?? [];
    list.push({ id, status });
    byBusiness.set(businessId, list);
  }
  for (const [businessId, moves] of byBusiness) await messageStatusesChanged(trx, businessId, moves);
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
