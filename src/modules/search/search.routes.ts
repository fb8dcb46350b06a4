import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { SearchItem, UpsertItemBody } from './search.schemas.ts';

/** Public search collection writes. */
export const searchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/search/item',
    {
      schema: {
        tags: ['search'],
        security: [{ apiKey: [] }],
        summary: 'Create or update an item of a search collection',
        description:
          'Upserts by collection and external_id. `operation` is created, updated (payload, embedding input or activity changed) or ' +
          'unchanged (nothing written). Without embedding_json, the embedding input is taken from the item: each of the ' +
          "collection's embedding_fields it holds, under the field's name (a dotted field reads nested objects); an item with none " +
          'of them is a 400. embedding_regenerated is true when the item is new or its embedding input changed. 200 whatever the ' +
          'operation. 400 for a collection_id that is not a collection of the business.',
        body: UpsertItemBody,
        response: responses({ 200: SearchItem }, 400, 401),
      },
    },
    async (request) => app.services.search.upsertItem(request.businessId, request.body),
  );
};
