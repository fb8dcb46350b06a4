import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { CreatedUser, InviteUserBody, Role, User } from './users.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const Params = Type.Object({ id: Uuid }, { additionalProperties: false });
const ChangeRoleBody = Type.Object({ role: Role }, { additionalProperties: false });
const ownerRules =
  "Only an owner makes an owner, changes an owner's role or removes an owner (403 `forbidden` to an admin); 409 " +
  '`last_owner` when the change would leave the business without an owner.';

/**
 * The users of the session's business: listed to everyone (assignees), invited, given a role and
 * removed by admins and owners.
 */
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

  app.patch(
    '/users/:id',
    {
      preHandler: requireRole('admin'),
      schema: {
        tags,
        security,
        summary: "Change a user's role (admins and owners)",
        description: `The change applies to the user's next request. ${ownerRules}`,
        params: Params,
        body: ChangeRoleBody,
        response: responses({ 200: Type.Object({ user: User }) }, 400, 401, 403, 404, 409),
      },
    },
    async (request) => ({
      user: await app.services.users.update(
        request.dashboard.businessId,
        request.params.id,
        request.body,
        request.dashboard.role,
      ),
    }),
  );

  app.delete(
    '/users/:id',
    {
      preHandler: requireRole('admin'),
      schema: {
        tags,
        security,
        summary: 'Remove a user (admins and owners)',
        description:
          'They can no longer sign in; their sessions end, their invitations close, they leave their teams, and the ' +
          'conversations and contacts assigned to them are unassigned (a contact_field_changed per contact, source ' +
          '`user_removed`). ' +
          ownerRules,
        params: Params,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const { businessId, role, userId } = request.dashboard;
      await app.services.users.remove(businessId, request.params.id, role, userId);
      return reply.status(204).send(null);
    },
  );
};
