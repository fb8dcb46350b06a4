import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessItemParams, BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { CreatedUser, CreateUserBody, UpdateUserBody, User } from './users.schemas.ts';

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
        description:
          '409 when the business already has a user with this email (in any case). With `invite`, the answer ' +
          'holds the invitation link, shown only now.',
        params: BusinessParams,
        body: CreateUserBody,
        response: responses({ 201: CreatedUser }, 400, 401, 404, 409),
      },
    },
    async (request, reply) => reply.status(201).send(await app.services.users.create(request.params.bid, request.body)),
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

  app.patch(
    '/businesses/:bid/users/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Rename a user or change their role',
        description:
          'A role change applies to the next request of their dashboard sessions. 409 `last_owner` when it would ' +
          'leave the business without an owner.',
        params: BusinessItemParams,
        body: UpdateUserBody,
        response: responses({ 200: Type.Object({ user: User }) }, 400, 401, 404, 409),
      },
    },
    async (request) => ({
      user: await app.services.users.update(request.params.bid, request.params.id, request.body),
    }),
  );

  app.delete(
    '/businesses/:bid/users/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Remove a user',
        description:
          'They can no longer sign in; their dashboard sessions end, their invitations close, and the conversations ' +
          'and contacts assigned to them are unassigned (a contact_field_changed per contact, source `user_removed`, ' +
          "actor system). Messages and events they wrote still name them. 409 `last_owner` for the business's only owner.",
        params: BusinessItemParams,
        response: responses({ 200: Type.Object({ success: Type.Boolean() }) }, 400, 401, 404, 409),
      },
    },
    async (request) => {
      await app.services.users.remove(request.params.bid, request.params.id);
      return { success: true };
    },
  );
};
