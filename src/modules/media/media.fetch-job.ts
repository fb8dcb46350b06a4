import { createHash } from 'node:crypto';
import type { ChannelProvider, FetchedMedia } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import type { OutboxJob } from '../../jobs/outbox.repository.ts';
import type { FileStorage } from '../../storage/file-storage.ts';
import { mediaRepository, type MediaRow } from './media.repository.ts';

/** The outbox kind of inbound media downloads; `ref_id` is the message id. */
export const MEDIA_FETCH_JOB = 'media_fetch';

/** Finds the provider adapter of a business's channel (undefined when the channel is gone). */
export type ProviderLookup = (businessId: string, channelId: string) => Promise<ChannelProvider | undefined>;

/** 10 tries: about 8 hours in all before the file is given up. */
const tries = repeatableTries(10);

/** A failure of ours (hash mismatch, storage, database): worth another try later. */
class LocalError extends Error {}

/**
 * Downloads the files of an inbound message from its provider into the file store. Safe to run
 * twice: stored files are skipped and a file is written whole before its row points at it. A final
 * failure leaves the message in place with its media row but no file.
 */
export function mediaFetchJobHandler(db: Db, storage: FileStorage, providerFor: ProviderLookup): JobHandler {
  async function fetchOne(provider: ChannelProvider, item: MediaRow): Promise<void> {
    // Only the provider call is judged by the provider's rules; failures after it are ours.
    const fetched = await provider.fetchMedia(item.provider_media_id!);
    try {
      await store(item, fetched);
    } catch (err) {
      throw err instanceof LocalError ? err : new LocalError(`storing media ${item.id}: ${(err as Error).message}`);
    }
  }

  async function store(item: MediaRow, fetched: FetchedMedia): Promise<void> {
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
    await mediaRepository.recordFile(db, item.business_id, item.id, {
      storage_key: key,
      size_bytes: size,
      content_type: contentType,
      sha256: digest.toString('hex'),
    });
  }

  async function handle(job: OutboxJob): Promise<JobOutcome> {
    const items = await mediaRepository.unfetched(db, job.business_id, job.ref_id);
    if (items.length === 0) return { done: true };
    const channelId = await mediaRepository.channelOfMessage(db, job.business_id, job.ref_id);
    if (!channelId) return { failed: 'the message has no channel to fetch its media from' };
    const provider = await providerFor(job.business_id, channelId);
    if (!provider) return { failed: `channel ${channelId} not found` };
    for (const item of items) {
      try {
        await fetchOne(provider, item);
      } catch (err) {
        const { retryable, detail } =
          err instanceof LocalError ? { retryable: true, detail: err.message } : provider.classifyError(err);
        return tries.afterFailure(job, retryable, detail);
      }
    }
    return { done: true };
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
