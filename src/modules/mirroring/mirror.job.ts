import type { FastifyBaseLogger } from 'fastify';
import { channelKind } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { outboxRepository } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler } from '../../jobs/outbox.worker.ts';
import type { ChannelsService } from '../channels/channels.service.ts';
import type { AfterFetch } from '../media/media.fetch-job.ts';
import type { MediaService } from '../media/media.service.ts';
import { mirroringRepository } from './mirroring.repository.ts';

/** The outbox kind of mirrored messages; `ref_id` is the inbound message. */
export const MIRROR_JOB = 'mirror';

/** 8 tries, 30 s doubling: a helpdesk down for an hour or two still gets the message. */
const MAX_TRIES = 8;
const tries = repeatableTries(MAX_TRIES);

/**
 * A mirror job waiting for its message's files (mirrorJobHandler) runs as soon as the download job
 * stored them, in that job's commit, rather than after its backoff.
 */
export function mirrorAfterFetch(wake: () => void): AfterFetch {
  return {
    queue: (trx, businessId, messageId) => outboxRepository.runNow(trx, businessId, MIRROR_JOB, messageId),
    wake,
  };
}

/**
 * Copies one inbound message to each of the business's channels that mirror its type (a helpdesk's
 * inbox), through the adapter's `mirror`, keyed by the message's id, with its files from the file
 * store. A file still being fetched from the customer's channel holds the copy back until it is
 * stored (the job comes again as after a failure, or as soon as the file is: mirrorAfterFetch), or
 * its fetch ended without it, or the job's last try, which copies the message with the files it
 * has. A failure of any channel retries them all: the providers keep one copy per key, so those
 * that had it already keep one.
 */
export function mirrorJobHandler(
  db: Db,
  channels: ChannelsService,
  media: Pick<MediaService, 'filesOf'>,
  log: FastifyBaseLogger,
): JobHandler {
  return {
    kind: MIRROR_JOB,
    concurrency: 4,
    leaseSeconds: 60,
    onAbandoned: tries.onAbandoned,
    async handle(job) {
      const businessId = job.business_id;
      const message = await mirroringRepository.message(db, businessId, job.ref_id);
      if (!message?.conversation_id || message.direction !== 'inbound') return { done: true };
      const address = channelKind(message.channel_kind)?.address.kind;
      const { files, fetching } = await media.filesOf(businessId, message.id);
      if (fetching && job.attempts < MAX_TRIES)
        return tries.afterFailure(job, true, "waiting for the message's files to be fetched");
      let failure: { retryable: boolean; error: string } | undefined;
      for (const channel of await channels.mirroring(businessId)) {
        if (channel.id === message.channel_id) continue;
        const provider = channels.providerFor(channel);
        if (!provider.mirror || !provider.mirrors?.(message.channel)) continue;
        try {
          await provider.mirror({
            id: message.id,
            conversationId: message.conversation_id,
            channelType: message.channel,
            // A file without a caption is stored with an empty text: the copy names its type instead.
            text: message.text || `[${message.type}]`,
            createdAt: new Date(message.created_at).toISOString(),
            sender: {
              address: message.sender_address ?? '',
              addressKind: address ?? 'unknown',
              name: message.sender_name,
            },
            to: message.channel_identifier ?? '',
            files: files.map((file) => ({
              id: String(file.id),
              kind: message.type,
              filename: file.filename,
              contentType: file.contentType,
              size: file.size,
              ...(file.read ? { read: file.read } : {}),
            })),
          });
        } catch (err) {
          const classified = provider.classifyError(err);
          if (classified.credentialsRejected) await channels.credentialsRejected(channel);
          log.warn({ channelId: channel.id, messageId: message.id, code: classified.code }, 'mirror failed');
          failure = {
            retryable: (failure?.retryable ?? false) || classified.retryable,
            error: `${classified.code}: ${classified.detail}`,
          };
        }
      }
      return failure ? tries.afterFailure(job, failure.retryable, failure.error) : { done: true };
    },
  };
}
