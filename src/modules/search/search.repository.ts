import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

const itemColumns = ['id', 'collection_id', 'external_id', 'source', 'is_active', 'payload', 'embedding_json', 'created_at', 'updated_at'] as const;

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
  insertItemIfNew(db: Db, businessId: string, row: ItemValues & { id: string; collection_id: string; external_id: string }) {
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

  updateItem(db: Db, businessId: string, id: string, values: ItemValues) {
    return db
      .updateTable('search_items')
      .set({ ...serialised(values), updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning(itemColumns)
      .executeTakeFirstOrThrow();
  },
};
