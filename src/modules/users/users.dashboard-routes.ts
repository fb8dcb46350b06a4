import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { CreatedUser, InviteUserBody, User } from './users.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];

/** The team of the session's business: listed to everyone, invited by admins and owners. */
export const dashboardTeamRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/users',
    {
      schema: {
        tags,
        security,
        summary: "The business's users, oldest first (at most 500)",
        response: responses({ 200: Type.Object({ users: Type.Array(User) }) }, 401),
      },
    },
    async (request) => ({ users: await app.services.users.list(request.dashboard.businessId, 500) }),
  );

  app.post(
    '/users',
    {
      preHandler: requireRole('admin'),
      schema: {
        tags,
        security,
        summary: 'Invite a user to the business (admins and owners)',
        description:
          'Answers the invitation link, shown only now. Only an owner may invite an owner. 409 when the business ' +
          'already has a user with this email.',
        body: InviteUserBody,
        response: responses({ 201: CreatedUser }, 400, 401, 403, 409),
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send(await app.services.users.invite(request.dashboard.businessId, request.dashboard.role, request.body)),
  );
};
