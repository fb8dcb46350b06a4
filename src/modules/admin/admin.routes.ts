import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, responses, Uuid } from '../../http/common.schemas.ts';
import {
  ApiKey,
  Business,
  BusinessItemParams,
  BusinessParams,
  CreateApiKeyBody,
  CreateBusinessBody,
  ListBusinessesQuery,
  UpdateBusinessBody,
} from './admin.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

/** Operator API: businesses and their API keys (each module provisions the rest of a business). */
export const adminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { businesses, apiKeys } = app.services;

  app.post(
    '/businesses',
    {
      schema: {
        tags,
        security,
        summary: 'Create a business',
        body: CreateBusinessBody,
        response: responses({ 201: Type.Object({ business: Business }) }, 400, 401),
      },
    },
    async (request, reply) => reply.status(201).send({ business: await businesses.create(request.body.name) }),
  );

  app.get(
    '/businesses',
    {
      schema: {
        tags,
        security,
        summary: 'List businesses, oldest first, or find them by name',
        description:
          'A page of `limit` businesses (default 100, max 500) and `next_after`: pass it as `after` for the next ' +
          'page; null on the last page. `name` keeps the businesses whose name contains it, in any case.',
        querystring: ListBusinessesQuery,
        response: responses(
          { 200: Type.Object({ businesses: Type.Array(Business), next_after: Nullable(Uuid) }) },
          400,
          401,
        ),
      },
    },
    async (request) => businesses.list({ ...request.query, limit: request.query.limit ?? 100 }),
  );

  app.get(
    '/businesses/:bid',
    {
      schema: {
        tags,
        security,
        summary: 'Read a business',
        params: BusinessParams,
        response: responses({ 200: Type.Object({ business: Business }) }, 400, 401, 404),
      },
    },
    async (request) => ({ business: await businesses.get(request.params.bid) }),
  );

  app.patch(
    '/businesses/:bid',
    {
      schema: {
        tags,
        security,
        summary: "Change a business's name, its AI agents' daily token budget or its time zone",
        description:
          'Sends the fields to change (at least one). `ai_daily_token_budget`: null returns the business to the ' +
          "service's AI_DAILY_TOKEN_BUDGET, 0 lifts the bound. `time_zone`: an IANA name PostgreSQL knows " +
          '(`pg_timezone_names`), else 400.',
        params: BusinessParams,
        body: UpdateBusinessBody,
        response: responses({ 200: Type.Object({ business: Business }) }, 400, 401, 404),
      },
    },
    async (request) => ({ business: await businesses.update(request.params.bid, request.body) }),
  );

  app.post(
    '/businesses/:bid/api-keys',
    {
      schema: {
        tags,
        security,
        summary: 'Create an API key (the key is shown only in this answer)',
        params: BusinessParams,
        body: Type.Optional(CreateApiKeyBody),
        response: responses({ 201: Type.Object({ api_key: ApiKey, key: Type.String() }) }, 400, 401, 404),
      },
    },
    async (request, reply) => {
      await businesses.get(request.params.bid);
      const { apiKey, key } = await apiKeys.create(request.params.bid, request.body?.name);
      return reply.status(201).send({ api_key: apiKey, key });
    },
  );

  app.get(
    '/businesses/:bid/api-keys',
    {
      schema: {
        tags,
        security,
        summary: 'List API keys (never the keys themselves)',
        params: BusinessParams,
        response: responses({ 200: Type.Object({ api_keys: Type.Array(ApiKey) }) }, 400, 401, 404),
      },
    },
    async (request) => {
      await businesses.get(request.params.bid);
      return { api_keys: await apiKeys.list(request.params.bid) };
    },
  );

  app.delete(
    '/businesses/:bid/api-keys/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Revoke an API key; it stops working at once',
        params: BusinessItemParams,
        response: responses({ 200: Type.Object({ success: Type.Boolean() }) }, 400, 401, 404),
      },
    },
    async (request) => {
      await apiKeys.revoke(request.params.bid, request.params.id);
      return { success: true };
    },
  );
};
