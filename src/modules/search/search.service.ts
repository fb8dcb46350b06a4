import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { enqueueJob, type JobHandler, type OutboxWorker } from '../../jobs/outbox.worker.ts';
import { conflict, invalid } from '../../lib/domain-errors.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { isJsonObject } from '../../lib/json-merge.ts';
import type { EmbeddingProvider } from './embeddings.client.ts';
import { SEARCH_EMBED_JOB, searchEmbedJobHandler } from './search.embed-job.ts';
import { searchRepository, type ItemValues, type SimilarItem, type VectorMethod } from './search.repository.ts';
import { SEARCH_LIMITS, type SearchItemRecord, type UpsertItemInput } from './search.schemas.ts';

/** How long an item may wait for its embedding before a write queues it again. */
const REQUEUE_AFTER_MS = 60 * 60 * 1000;

/** Items an agent's search answers at most. */
export const SIMILAR_LIMIT = 5;

/** Who wrote an item through POST /search/item (the item's `source`). */
const API_SOURCE = 'api';

/**
 * Search collections and their items: the knowledge an AI agent draws on. The operator creates a
 * collection with the fields an item's embedding is computed from; the business writes items into
 * it through the public API, one upsert per item.
 */
export class SearchService {
  /** `embeddings`: where item embeddings are computed; without it they are not (the input is kept). */
  constructor(
    private readonly db: Db,
    private readonly worker: OutboxWorker,
    private readonly embeddings?: EmbeddingProvider,
  ) {}

  /** The job that computes item embeddings, when a provider is configured. */
  embedJobHandler(): JobHandler | undefined {
    return this.embeddings ? searchEmbedJobHandler(this.db, this.embeddings) : undefined;
  }

  /** Whether items can be searched by meaning: an embeddings API is configured. */
  get searchable(): boolean {
    return this.embeddings !== undefined;
  }

  /**
   * The business's items nearest in meaning to `text` (at most SIMILAR_LIMIT), in the collection
   * named by `collection` (its id or its name) or in all. `method` forces pgvector or the SQL scan
   * (tests and the benchmark compare them); by default pgvector where the database has it.
   */
  async similar(
    businessId: string,
    text: string,
    options: { collection?: string; limit?: number; method?: VectorMethod } = {},
  ): Promise<SimilarItem[]> {
    if (!this.embeddings) throw invalid('search is not configured (EMBEDDINGS_URL is unset)');
    let collectionIds: string[] | undefined;
    if (options.collection !== undefined) {
      const ref = options.collection;
      const found =
        (isUuid(ref) ? await searchRepository.findCollectionByRef(this.db, businessId, ref, true) : undefined) ??
        (await searchRepository.findCollectionByRef(this.db, businessId, ref, false));
      if (!found) throw invalid(`no collection "${ref}"`);
      collectionIds = [found.id];
    }
    const { vector } = await this.embeddings.embed(text);
    const method = options.method ?? (await searchRepository.vectorMethod(this.db));
    const limit = Math.min(options.limit ?? SIMILAR_LIMIT, SIMILAR_LIMIT);
    return searchRepository.nearestItems(this.db, businessId, { vector, collectionIds, limit }, method);
  }

  async createCollection(businessId: string, input: { name: string; embedding_fields: string[] }) {
    try {
      return await searchRepository.insertCollection(this.db, businessId, { id: newId(), ...input });
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict(`a collection named "${input.name}" already exists`, [{ field: 'name' }]);
      throw err;
    }
  }

  listCollections(businessId: string, limit: number) {
    return searchRepository.listCollections(this.db, businessId, limit);
  }

  /**
   * Creates or updates the item of `external_id` in the collection (unique per business and
   * collection): `created` when new, `updated` when its payload, embedding input or activity
   * changed, `unchanged` (nothing written) otherwise. Two writes of one new item at once: the
   * second finds the first's row and compares with it.
   */
  async upsertItem(businessId: string, input: UpsertItemInput): Promise<SearchItemRecord> {
    const collection = await searchRepository.findCollection(this.db, businessId, input.collection_id);
    if (!collection) {
      throw invalid('collection_id is not a collection of this business', [
        { location: 'body', path: '/collection_id', message: 'unknown collection' },
      ]);
    }
    checkSize(input.item, SEARCH_LIMITS.itemBytes, '/item');
    const embedding = input.embedding_json ?? embeddingInput(input.item, collection.embedding_fields);
    checkSize(embedding, SEARCH_LIMITS.embeddingBytes, input.embedding_json ? '/embedding_json' : '/item');
    // As stored and read back (-0 is written 0), so an unchanged write compares equal.
    const stored = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
    const values: ItemValues = {
      payload: stored(input.item),
      embedding_json: stored(embedding),
      is_active: input.active ?? true,
      source: API_SOURCE,
    };

    const item = await this.db.transaction().execute(async (trx) => {
      const key = { collection_id: collection.id, external_id: input.external_id };
      // An embedding is queued in the transaction of the write that needs it (nothing lost on a crash).
      const embedLater = async (id: string) => {
        if (!this.embeddings) return;
        await enqueueJob(trx, { businessId, kind: SEARCH_EMBED_JOB, refId: id });
        await searchRepository.markEmbeddingQueued(trx, businessId, id);
      };
      const created = await searchRepository.insertItemIfNew(trx, businessId, { id: newId(), ...key, ...values });
      if (created) {
        await embedLater(created.id);
        return { ...created, operation: 'created' as const, embedding_regenerated: true };
      }
      const current = await searchRepository.findItemForUpdate(trx, businessId, key.collection_id, key.external_id);
      const embeddingChanged = !isDeepStrictEqual(current.embedding_json, values.embedding_json);
      // An item still without its embedding long after its job was queued (the job failed, say
      // through an API outage) gets another with the next write.
      const overdue =
        this.embeddings !== undefined &&
        !embeddingChanged &&
        current.embedded_at === null &&
        (current.embedding_queued_at === null ||
          Date.parse(current.embedding_queued_at) < Date.now() - REQUEUE_AFTER_MS);
      if (embeddingChanged || overdue) await embedLater(current.id);
      if (
        !embeddingChanged &&
        current.is_active === values.is_active &&
        isDeepStrictEqual(current.payload, values.payload)
      ) {
        return { ...current, operation: 'unchanged' as const, embedding_regenerated: overdue };
      }
      const updated = await searchRepository.updateItem(trx, businessId, current.id, values, embeddingChanged);
      return { ...updated, operation: 'updated' as const, embedding_regenerated: embeddingChanged || overdue };
    });
    if (item.embedding_regenerated && this.embeddings) this.worker.wake(SEARCH_EMBED_JOB);
    return item;
  }
}

/**
 * What an item's embedding is computed from when the write sends no embedding_json: each of the
 * collection's embedding_fields the item holds (a dotted field reads into nested objects), under
 * the field's name. An item with none of them has nothing to find it by: a 400.
 */
export function embeddingInput(item: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const field of fields) {
    // A key holding the dot itself ({"a.b": …}) is read before the path into nested objects.
    const value = Object.hasOwn(item, field)
      ? item[field]
      : field
          .split('.')
          .reduce<unknown>((at, key) => (isJsonObject(at) && Object.hasOwn(at, key) ? at[key] : undefined), item);
    if (value !== undefined && value !== null) picked[field] = value;
  }
  if (Object.keys(picked).length === 0) {
    throw invalid(
      `the item has none of the collection's embedding_fields (${fields.join(', ')}): send one of them, or embedding_json`,
      [{ location: 'body', path: '/item', message: 'no embedding field' }],
    );
  }
  return picked;
}

function checkSize(value: unknown, limit: number, path: string): void {
  if (Buffer.byteLength(JSON.stringify(value)) > limit) {
    throw invalid(`${path.slice(1)} is larger than ${limit / 1024} KiB`, [
      { location: 'body', path, message: 'too large' },
    ]);
  }
}
