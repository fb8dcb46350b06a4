import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { ApiKey, CreateApiKeyBody } from '../admin/admin.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const KeyParams = Type.Object({ id: Uuid }, { additionalProperties: false });

/** The API keys of the session's business, for admins and owners (Dev Tools): the operator API's rules. */
export const dashboardApiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apiKeys } = app.services;
  const preHandler = requireRole('admin');

  app.get(
    '/api-keys',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'List API keys, newest first, revoked ones too (never the keys themselves)',
        response: responses({ 200: Type.Object({ api_keys: Type.Array(ApiKey) }) }, 401, 403),
      },
    },
    async (request) => ({ api_keys: await apiKeys.list(request.dashboard.businessId) }),
  );

  app.post(
    '/api-keys',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Create an API key (the key is shown only in this answer)',
        body: CreateApiKeyBody,
        response: responses({ 201: Type.Object({ api_key: ApiKey, key: Type.String() }) }, 400, 401, 403),
      },
    },
    async (request, reply) => {
      const { apiKey, key } = await apiKeys.create(request.dashboard.businessId, request.body.name);
      return reply.status(201).send({ api_key: apiKey, key });
    },
  );

  app.delete(
    '/api-keys/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Revoke an API key: the next request with it answers 401, in every server process',
        params: KeyParams,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      await apiKeys.revoke(request.dashboard.businessId, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
