import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import { repeatableTries, type JobHandler } from '../../jobs/outbox.worker.ts';
import type { ChannelsService } from '../channels/channels.service.ts';
import { mirroringRepository } from './mirroring.repository.ts';

/** The outbox kind of relayed replies' delivery reports; `ref_id` is the reply's message. */
export const RELAY_STATUS_JOB = 'relay_status';

/** 5 tries: a report is worth a retry, not hours of them. */
const tries = repeatableTries(5);

/**
 * Tells the provider that relayed a reply (RelayedReply) how it went out: sent once the send job
 * marked it SENT (or later), failed with its error once ERROR. A reply sent as several messages (a
 * text and files) is reported once none of them is PENDING any more, failed when any failed: the
 * job of the part that ended last reports it (parts that ended together may each report the same).
 * Best effort: the reply itself is sent already, or not, whatever the report does.
 */
export function relayStatusJobHandler(db: Db, channels: ChannelsService, log: FastifyBaseLogger): JobHandler {
  return {
    kind: RELAY_STATUS_JOB,
    concurrency: 4,
    leaseSeconds: 60,
    onAbandoned: tries.onAbandoned,
    async handle(job) {
      const message = await mirroringRepository.relayed(db, job.business_id, job.ref_id);
      if (!message?.relayed_by || !message.relay_key || message.status === 'PENDING') return { done: true };
      const channel = await channels.find(job.business_id, message.relayed_by);
      const provider = channel?.provider_kind ? channels.providerFor(channel) : undefined;
      if (!provider?.reportRelayed) return { done: true };
      const parts = message.contact_id
        ? await mirroringRepository.relayedParts(
            db,
            job.business_id,
            message.contact_id,
            message.relayed_by,
            message.relay_key,
          )
        : [message];
      if (parts.some((p) => p.status === 'PENDING')) return { done: true };
      const failed = parts.find((p) => p.status === 'ERROR');
      try {
        await provider.reportRelayed(
          message.relay_key,
          failed ? { failed: failed.error ?? 'not sent' } : { sent: true },
        );
        return { done: true };
      } catch (err) {
        const failure = provider.classifyError(err);
        log.warn({ channelId: message.relayed_by, messageId: job.ref_id, code: failure.code }, 'relay report failed');
        return tries.afterFailure(job, failure.retryable, `${failure.code}: ${failure.detail}`);
      }
    },
  };
}
