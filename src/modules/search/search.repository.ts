import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

const itemColumns = [
  'id',
  'collection_id',
  'external_id',
  'source',
  'is_active',
  'payload',
  'embedding_json',
  'embedded_at',
  'embedding_queued_at',
  'created_at',
  'updated_at',
] as const;

/** What a write of an item stores. */
export interface ItemValues {
  payload: Record<string, unknown>;
  embedding_json: Record<string, unknown>;
  is_active: boolean;
  source: string;
}

/** An item found by similarity, with its collection and score (cosine similarity, 1 = same direction). */
export interface SimilarItem {
  id: string;
  collection_id: string;
  collection: string;
  external_id: string;
  payload: Record<string, unknown>;
  score: number;
}

/** How items are ranked: pgvector's distance operator in its schema, or the same cosine computed in SQL. */
export type VectorMethod = { kind: 'pgvector'; schema: string } | { kind: 'scan' };

/** Items the scan in SQL (no pgvector) reads at most: those changed last. */
export const SCAN_ITEMS = 10_000;

// What each database offers, read once per connection pool.
const methods = new WeakMap<Db, Promise<VectorMethod>>();

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

const serialised = (values: ItemValues) => ({
  ...values,
  payload: JSON.stringify(values.payload),
  embedding_json: JSON.stringify(values.embedding_json),
});

export const searchRepository = {
  /** pgvector's schema where the extension is installed (migration 0032), else the scan in SQL. */
  vectorMethod(db: Db): Promise<VectorMethod> {
    let method = methods.get(db);
    if (!method) {
      method = sql<{ schema: string }>`select n.nspname as schema from pg_extension e
        join pg_namespace n on n.oid = e.extnamespace where e.extname = 'vector'`
        .execute(db)
        .then(({ rows }): VectorMethod => (rows[0] ? { kind: 'pgvector', schema: rows[0].schema } : { kind: 'scan' }));
      methods.set(db, method);
    }
    return method;
  },

  /**
   * The `limit` active items of the business's collections (all, or those of `collectionIds`) whose
   * embedding is nearest to `vector` by cosine, most similar first, then by id. Exact either way:
   * pgvector's `<=>` over each candidate, or the same sum in SQL, so both rank alike. The scan in
   * SQL costs some 70 µs an item at 256 dimensions, so it reads the SCAN_ITEMS items changed last
   * (docs/PERFORMANCE.md#vector-search). Items embedded with another number of dimensions (another
   * model) and zero vectors are left out.
   */
  async nearestItems(
    db: Db,
    businessId: string,
    query: { vector: number[]; collectionIds?: string[]; limit: number },
    method: VectorMethod,
  ): Promise<SimilarItem[]> {
    const collections = query.collectionIds ?? null;
    const distance =
      method.kind === 'pgvector'
        ? sql<number>`(i.embedding::${sql.raw(`${quoted(method.schema)}.vector`)} operator(${sql.raw(
            `${quoted(method.schema)}.<=>`,
          )}) ${`[${query.vector.join(',')}]`}::${sql.raw(`${quoted(method.schema)}.vector`)})`
        : sql<number>`(select 1 - sum(a * b) / nullif(sqrt(sum(a * a)) * sqrt(sum(b * b)), 0)
            from unnest(i.embedding, ${query.vector}::float8[]) as t(a, b))`;
    const bound = method.kind === 'scan' ? sql`order by updated_at desc, id desc limit ${SCAN_ITEMS}` : sql``;
    const { rows } = await sql<SimilarItem>`
      select id, collection_id, collection, external_id, payload, 1 - distance as score from (
        select i.id, i.collection_id, c.name as collection, i.external_id, i.payload,
          -- The planner may compute the distance before the filter below: a CASE keeps other lengths out of it.
          case when cardinality(i.embedding) = ${query.vector.length} then ${distance} end as distance
        from (
          select id, collection_id, external_id, payload, embedding from search_items
          where business_id = ${businessId} and is_active and embedding is not null
            and cardinality(embedding) = ${query.vector.length}
            and (${collections}::uuid[] is null or collection_id = any(${collections}::uuid[]))
          ${bound}
        ) i
        join search_collections c on c.business_id = ${businessId} and c.id = i.collection_id
      ) ranked
      where distance is not null and distance <> 'NaN'
      order by distance, id
      limit ${query.limit}`.execute(db);
    return rows;
  },

  /** The collection named by id or by name, of the business. */
  findCollectionByRef(db: Db, businessId: string, ref: string, isId: boolean) {
    return db
      .selectFrom('search_collections')
      .select(['id', 'name'])
      .where('business_id', '=', businessId)
      .where(isId ? 'id' : 'name', '=', ref)
      .executeTakeFirst();
  },

  /** What an item's embedding is computed from (the embed job). */
  embeddingInput(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('search_items')
      .select('embedding_json')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** Notes that the item's embedding job was queued now. */
  async markEmbeddingQueued(db: Db, businessId: string, id: string) {
    await db
      .updateTable('search_items')
      .set({ embedding_queued_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .execute();
  },

  /** Stores an embedding computed from `input`, unless the item's input has changed since. */
  async recordEmbedding(
    db: Db,
    businessId: string,
    id: string,
    input: Record<string, unknown>,
    embedding: { vector: number[]; model: string },
  ) {
    await db
      .updateTable('search_items')
      .set({ embedding: embedding.vector, embedding_model: embedding.model, embedded_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('embedding_json', '=', sql<Record<string, unknown>>`${JSON.stringify(input)}::jsonb`)
      .execute();
  },

  insertCollection(db: Db, businessId: string, row: { id: string; name: string; embedding_fields: string[] }) {
    return db
      .insertInto('search_collections')
      .values({ ...row, embedding_fields: JSON.stringify(row.embedding_fields), business_id: businessId })
      .returning(['id', 'name', 'embedding_fields'])
      .executeTakeFirstOrThrow();
  },

  /** The collections of a business, oldest first. */
  listCollections(db: Db, businessId: string, limit: number) {
    return db
      .selectFrom('search_collections')
      .select(['id', 'name', 'embedding_fields'])
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  findCollection(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('search_collections')
      .select(['id', 'name', 'embedding_fields'])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** The new item, or undefined when the collection already holds one with this external_id. */
  insertItemIfNew(
    db: Db,
    businessId: string,
    row: ItemValues & { id: string; collection_id: string; external_id: string },
  ) {
    return db
      .insertInto('search_items')
      .values({ ...row, ...serialised(row), business_id: businessId })
      .onConflict((oc) => oc.columns(['business_id', 'collection_id', 'external_id']).doNothing())
      .returning(itemColumns)
      .executeTakeFirst();
  },

  /** The item of this external_id, locked until the transaction ends (unique index). */
  findItemForUpdate(db: Db, businessId: string, collectionId: string, externalId: string) {
    return db
      .selectFrom('search_items')
      .select(itemColumns)
      .where('business_id', '=', businessId)
      .where('collection_id', '=', collectionId)
      .where('external_id', '=', externalId)
      .forUpdate()
      .executeTakeFirstOrThrow();
  },

  /** Writes the item; a new embedding input drops the embedding computed from the old one. */
  updateItem(db: Db, businessId: string, id: string, values: ItemValues, embeddingChanged: boolean) {
    const dropEmbedding = embeddingChanged ? { embedding: null, embedding_model: null, embedded_at: null } : {};
    return db
      .updateTable('search_items')
      .set({ ...serialised(values), ...dropEmbedding, updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning(itemColumns)
      .executeTakeFirstOrThrow();
  },
};
