import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { EmbeddingError, embeddingText, type EmbeddingProvider } from './embeddings.client.ts';
import { searchRepository } from './search.repository.ts';

/** The outbox kind of search item embeddings; `ref_id` is the item id. */
export const SEARCH_EMBED_JOB = 'search_embed';

/** 12 tries before a job is given up: an API outage of some 6 hours. */
const tries = repeatableTries(12);

/**
 * Computes a search item's embedding from its embedding input, and stores it only while the item
 * still has that input: a write that changed it meanwhile queued a job of its own. Safe to run
 * twice (the same input gives the same vector).
 */
export function searchEmbedJobHandler(db: Db, provider: EmbeddingProvider): JobHandler {
  async function handle(job: OutboxJob): Promise<JobOutcome> {
    const item = await searchRepository.embeddingInput(db, job.business_id, job.ref_id);
    if (!item) return { done: true };
    try {
      const { vector, model } = await provider.embed(embeddingText(item.embedding_json));
      // The embedding and the job's end are one commit (docs/ARCHITECTURE.md#the-outbox): a reader
      // that sees the one sees the other.
      await db.transaction().execute(async (trx) => {
        await searchRepository.recordEmbedding(trx, job.business_id, job.ref_id, item.embedding_json, {
          vector,
          model,
        });
        await outboxRepository.complete(trx, job);
      });
      return { done: true, recorded: true };
    } catch (err) {
      const retryable = err instanceof EmbeddingError ? err.retryable : true;
      const detail = (err as Error).message;
      return tries.afterFailure(job, retryable, detail);
    }
  }

  return {
    kind: SEARCH_EMBED_JOB,
    concurrency: 4,
    leaseSeconds: 120,
    handle,
    // Computing again is harmless.
    onAbandoned: tries.onAbandoned,
  };
}
