import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/common.schemas.ts';

/** Bounds of the search collections (the contract gives none). */
export const SEARCH_LIMITS = {
  /** An item's payload, serialised. */
  itemBytes: 256 * 1024,
  /** What an item's embedding is computed from, serialised: a few thousand tokens of an embedding model. */
  embeddingBytes: 32 * 1024,
  embeddingFields: 50,
} as const;

const EmbeddingField = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^.]+(\\.[^.]+)*$',
  description: 'a key of the item, or a dotted path into it (details.summary)',
});

export const CreateCollectionBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    embedding_fields: Type.Array(EmbeddingField, {
      minItems: 1,
      maxItems: SEARCH_LIMITS.embeddingFields,
      uniqueItems: true,
      description: "the item fields an item's embedding is computed from, when a write sends no embedding_json",
    }),
  },
  { additionalProperties: false },
);

export const Collection = Type.Object({ id: Uuid, name: Type.String(), embedding_fields: Type.Array(Type.String()) });
export const CollectionResponse = Type.Object({ collection: Collection });

const JsonObject = (description: string, options: { minProperties?: number } = {}) =>
  Type.Record(Type.String(), Type.Unknown(), { description, ...options });

export const UpsertItemBody = Type.Object(
  {
    collection_id: Uuid,
    external_id: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '\\S',
      description: "the caller's id of the item, unique within the collection; not only spaces",
    }),
    item: JsonObject(`the item, stored whole as its payload; at most ${SEARCH_LIMITS.itemBytes / 1024} KiB`),
    embedding_json: Type.Optional(
      JsonObject(
        `what the embedding is computed from, instead of the collection's embedding_fields; not empty; at most ${SEARCH_LIMITS.embeddingBytes / 1024} KiB`,
        { minProperties: 1 },
      ),
    ),
    active: Type.Optional(Type.Boolean({ description: 'whether the item is active after the write; default true' })),
  },
  { additionalProperties: false },
);
export type UpsertItemInput = Static<typeof UpsertItemBody>;

export const SearchItem = Type.Object({
  id: Uuid,
  collection_id: Uuid,
  external_id: Type.String(),
  source: Type.String({ description: "who last wrote the item: 'api' for this endpoint" }),
  operation: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('unchanged')]),
  is_active: Type.Boolean(),
  embedding_regenerated: Type.Boolean({
    description:
      'true when the item is new or its embedding_json changed: its embedding is computed again (when the service has EMBEDDINGS_URL)',
  }),
  payload: Type.Record(Type.String(), Type.Unknown()),
  embedding_json: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type SearchItemRecord = Static<typeof SearchItem>;
