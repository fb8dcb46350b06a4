import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { BusinessParams, ListQuery } from '../admin/admin.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

const CreateTeamBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
const Team = Type.Object({ id: Uuid, name: Type.String() });

/** Operator routes for the teams of a business. */
export const teamsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/businesses/:bid/teams',
    {
      schema: {
        tags,
        security,
        summary: 'Create a team',
        params: BusinessParams,
        body: CreateTeamBody,
        response: responses({ 201: Type.Object({ team: Team }) }, 400, 401, 404),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ team: await app.services.teams.create(request.params.bid, request.body.name) }),
  );

  app.get(
    '/businesses/:bid/teams',
    {
      schema: {
        tags,
        security,
        summary: 'List the teams of the business',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ teams: Type.Array(Team) }) }, 400, 401, 404),
      },
    },
    async (request) => ({ teams: await app.services.teams.list(request.params.bid, request.query.limit ?? 100) }),
  );
};
