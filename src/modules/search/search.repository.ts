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

const serialised = (values: ItemValues) => ({
  ...values,
  payload: JSON.stringify(values.payload),
  embedding_json: JSON.stringify(values.embedding_json),
});

export const searchRepository = {
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
