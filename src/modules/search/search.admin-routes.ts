import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { Type } from 'typebox';
import { BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { Collection, CollectionResponse, CreateCollectionBody } from './search.schemas.ts';

/** Operator routes for the search collections of a business. */
export const searchAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/businesses/:bid/collections',
    {
      schema: {
        tags: ['operator'],
        security: [{ adminToken: [] }],
        summary: 'Create a search collection',
        description:
          'Its id is the collection_id of POST /search/item. 409 when the business has a collection of this name.',
        params: BusinessParams,
        body: CreateCollectionBody,
        response: responses({ 201: CollectionResponse }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send({ collection: await app.services.search.createCollection(request.params.bid, request.body) }),
  );

  app.get(
    '/businesses/:bid/collections',
    {
      schema: {
        tags: ['operator'],
        security: [{ adminToken: [] }],
        summary: 'List the search collections of the business, oldest first',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ collections: Type.Array(Collection) }) }, 400, 401, 404),
      },
    },
    async (request) => ({
      collections: await app.services.search.listCollections(request.params.bid, request.query.limit ?? 100),
    }),
  );
};
