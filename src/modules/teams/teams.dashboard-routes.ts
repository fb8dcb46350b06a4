import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { TEAM_MEMBERS_MAX } from './teams.service.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const Params = Type.Object({ id: Uuid }, { additionalProperties: false });
const TeamName = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });
const Team = Type.Object({
  id: Uuid,
  name: Type.String(),
  member_ids: Type.Array(Uuid, {
    description: 'the users of the team, oldest membership first (those added together by id)',
  }),
});
const MembersBody = Type.Object(
  {
    user_ids: Type.Array(Uuid, {
      maxItems: TEAM_MEMBERS_MAX,
      description: `every member of the team (at most ${TEAM_MEMBERS_MAX}); users left out leave it`,
    }),
  },
  { additionalProperties: false },
);

/** The teams of the session's business: listed to everyone, made and changed by admins and owners. */
export const dashboardTeamsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { teams } = app.services;
  const admins = requireRole('admin');

  app.get(
    '/teams',
    {
      schema: {
        tags,
        security,
        summary: "The business's teams with their members, oldest first (at most 500)",
        response: responses({ 200: Type.Object({ teams: Type.Array(Team) }) }, 401),
      },
    },
    async (request) => ({ teams: await teams.listWithMembers(request.dashboard.businessId, 500) }),
  );

  app.post(
    '/teams',
    {
      preHandler: admins,
      schema: {
        tags,
        security,
        summary: 'Create a team (admins and owners)',
        body: TeamName,
        response: responses({ 201: Type.Object({ team: Team }) }, 400, 401, 403),
      },
    },
    async (request, reply) => {
      const team = await teams.create(request.dashboard.businessId, request.body.name);
      return reply.status(201).send({ team: { ...team, member_ids: [] } });
    },
  );

  app.patch(
    '/teams/:id',
    {
      preHandler: admins,
      schema: {
        tags,
        security,
        summary: 'Rename a team (admins and owners)',
        params: Params,
        body: TeamName,
        response: responses(
          { 200: Type.Object({ team: Type.Object({ id: Uuid, name: Type.String() }) }) },
          400,
          401,
          403,
          404,
        ),
      },
    },
    async (request) => ({
      team: await teams.rename(request.dashboard.businessId, request.params.id, request.body.name),
    }),
  );

  app.put(
    '/teams/:id/members',
    {
      preHandler: admins,
      schema: {
        tags,
        security,
        summary: "Set a team's members (admins and owners)",
        description: '400 when an id is not a user of the business (a removed user included).',
        params: Params,
        body: MembersBody,
        response: responses({ 200: Type.Object({ team: Team }) }, 400, 401, 403, 404),
      },
    },
    async (request) => ({
      team: await teams.setMembers(request.dashboard.businessId, request.params.id, request.body.user_ids),
    }),
  );

  app.delete(
    '/teams/:id',
    {
      preHandler: admins,
      schema: {
        tags,
        security,
        summary: 'Delete a team (admins and owners)',
        description: 'Its memberships go with it, and it is taken off its conversations (their users stay).',
        params: Params,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      await teams.delete(request.dashboard.businessId, request.params.id, request.dashboard.userId);
      return reply.status(204).send(null);
    },
  );
};
