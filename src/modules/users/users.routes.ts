import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { CreateUserBody, User } from './users.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

/** Operator routes for the users (team members) of a business. */
export const usersAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/businesses/:bid/users',
    {
      schema: {
        tags,
        security,
        summary: 'Create a user of the business',
        description: '409 when the business already has a user with this email (in any case).',
        params: BusinessParams,
        body: CreateUserBody,
        response: responses({ 201: Type.Object({ user: User }) }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ user: await app.services.users.create(request.params.bid, request.body) }),
  );

  app.get(
    '/businesses/:bid/users',
    {
      schema: {
        tags,
        security,
        summary: 'List the users of the business',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ users: Type.Array(User) }) }, 400, 401, 404),
      },
    },
    async (request) => ({ users: await app.services.users.list(request.params.bid, request.query.limit ?? 100) }),
  );
};
