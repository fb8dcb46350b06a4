import { createHash } from 'node:crypto';
import type { ChannelProvider, FetchedMedia } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import type { FileStorage } from '../../storage/file-storage.ts';
import { mediaRepository, type MediaFile, type MediaRow } from './media.repository.ts';

/** The outbox kind of inbound media downloads; `ref_id` is the message id. */
export const MEDIA_FETCH_JOB = 'media_fetch';

/** Finds the provider adapter of a business's channel (undefined when the channel is gone). */
export type ProviderLookup = (businessId: string, channelId: string) => Promise<ChannelProvider | undefined>;

/**
 * Work that follows a message's files once they are stored (a recording's transcript): queued in
 * the commit that records them, its worker woken after it.
 */
export interface AfterFetch {
  /** Queues the work for the message in `trx` when it has any; whether it queued some. */
  queue(trx: Db, businessId: string, messageId: string): Promise<boolean>;
  wake(): void;
}

/** Several AfterFetch hooks as one: each queues its own work, and all are woken when any queued some. */
export function afterFetchAll(hooks: readonly AfterFetch[]): AfterFetch {
  return {
    async queue(trx, businessId, messageId) {
      let queued = false;
      for (const hook of hooks) queued = (await hook.queue(trx, businessId, messageId)) || queued;
      return queued;
    },
    wake: () => hooks.forEach((hook) => hook.wake()),
  };
}

/** 10 tries: about 8 hours in all before the file is given up. */
const tries = repeatableTries(10);

/** A failure of ours (hash mismatch, storage, database): worth another try later. */
class LocalError extends Error {}

/**
 * Downloads the files of an inbound message from its provider into the file store. Safe to run
 * twice: stored files are skipped and a file is written whole before its row points at it. The rows
 * of the files it stored and the job's end (done, due again, failed) are one commit, so a job is
 * done exactly when its files are recorded. A final failure leaves the message in place with its
 * media row but no file.
 */
export function mediaFetchJobHandler(
  db: Db,
  storage: FileStorage,
  providerFor: ProviderLookup,
  afterFetch?: AfterFetch,
): JobHandler {
  async function fetchOne(provider: ChannelProvider, item: MediaRow): Promise<MediaFile> {
    // Only the provider call is judged by the provider's rules; failures after it are ours.
    const fetched = await provider.fetchMedia(item.provider_media_id!);
    try {
      return await store(item, fetched);
    } catch (err) {
      throw err instanceof LocalError ? err : new LocalError(`storing media ${item.id}: ${(err as Error).message}`);
    }
  }

  /** Writes the file whole into the store; answers the row's fields that will point at it. */
  async function store(item: MediaRow, fetched: FetchedMedia): Promise<MediaFile> {
    const digest = createHash('sha256').update(fetched.bytes).digest();
    // Meta gives the hash in hex (media endpoint) or base64 (some notifications); either must match.
    for (const expected of [item.sha256, fetched.sha256]) {
      if (expected && expected !== digest.toString('hex') && expected !== digest.toString('base64')) {
        throw new LocalError(`sha256 of media ${item.id} does not match the provider's`);
      }
    }
    const key = `${item.business_id}/${item.id}`;
    const contentType = fetched.mimeType || item.content_type || 'application/octet-stream';
    const { size } = await storage.put(key, fetched.bytes, contentType);
    return {
      id: item.id,
      storage_key: key,
      size_bytes: size,
      content_type: contentType,
      sha256: digest.toString('hex'),
    };
  }

  /** The files stored and the job's end, in one transaction (outbox.worker.ts, `recorded`). */
  async function record(job: OutboxJob, files: MediaFile[], outcome: JobOutcome): Promise<JobOutcome> {
    const queued = await db.transaction().execute(async (trx) => {
      await mediaRepository.recordFiles(trx, job.business_id, files);
      const follows =
        'done' in outcome && files.length > 0 && afterFetch
          ? await afterFetch.queue(trx, job.business_id, job.ref_id)
          : false;
      if ('done' in outcome) await outboxRepository.complete(trx, job);
      else if ('failed' in outcome) await outboxRepository.fail(trx, job, outcome.failed);
      else if ('interrupted' in outcome) await outboxRepository.release(trx, job);
      else await outboxRepository.retryAt(trx, job, outcome.retryInSeconds, outcome.error);
      return follows;
    });
    if (queued) afterFetch?.wake();
    return { ...outcome, recorded: true };
  }

  async function handle(job: OutboxJob): Promise<JobOutcome> {
    const items = await mediaRepository.unfetched(db, job.business_id, job.ref_id);
    if (items.length === 0) return { done: true };
    const channelId = await mediaRepository.channelOfMessage(db, job.business_id, job.ref_id);
    if (!channelId) return { failed: 'the message has no channel to fetch its media from' };
    const provider = await providerFor(job.business_id, channelId);
    if (!provider) return { failed: `channel ${channelId} not found` };
    const files: MediaFile[] = [];
    for (const item of items) {
      try {
        files.push(await fetchOne(provider, item));
      } catch (err) {
        const { retryable, detail } =
          err instanceof LocalError ? { retryable: true, detail: err.message } : provider.classifyError(err);
        // The files stored before the failure are kept: the next try skips them.
        return record(job, files, tries.afterFailure(job, retryable, detail));
      }
    }
    return record(job, files, { done: true });
  }

  return {
    kind: MEDIA_FETCH_JOB,
    concurrency: 4,
    leaseSeconds: 120,
    handle,
    // Fetching again only rewrites the same bytes.
    onAbandoned: tries.onAbandoned,
  };
}
