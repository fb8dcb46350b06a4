import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { Invitation } from '../users/users.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const Params = Type.Object({ id: Uuid }, { additionalProperties: false });
const PendingInvitation = Type.Object({
  id: Uuid,
  user_id: Uuid,
  created_at: Timestamp,
  expires_at: Timestamp,
  open: Type.Boolean({ description: 'false once it has expired or was withdrawn: send it again for a new link' }),
});
const ownerRule = "Only an owner acts on an owner's invitation (403 `forbidden` to an admin).";

/** The invitations of the users who have not joined yet, for admins and owners: listed, sent again, withdrawn. */
export const dashboardInvitationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { invitations } = app.services;
  const preHandler = requireRole('admin');

  app.get(
    '/invitations',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'The latest invitation of each user who has not joined yet (at most 500; admins and owners)',
        response: responses({ 200: Type.Object({ invitations: Type.Array(PendingInvitation) }) }, 401, 403),
      },
    },
    async (request) => ({ invitations: await invitations.pending(request.dashboard.businessId, 500) }),
  );

  app.post(
    '/invitations/:id/resend',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Send an invitation again (admins and owners)',
        description:
          'Answers a new invitation link, shown only now; the earlier links of the user stop working. 409 ' +
          `\`invitation_used\` when the user has already joined. ${ownerRule}`,
        params: Params,
        response: responses({ 200: Type.Object({ invitation: Invitation }) }, 400, 401, 403, 404, 409),
      },
    },
    async (request) => ({
      invitation: await invitations.resend(request.dashboard.businessId, request.params.id, request.dashboard.role),
    }),
  );

  app.delete(
    '/invitations/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Withdraw an invitation (admins and owners)',
        description:
          'Its link stops working; the user stays listed and may be sent a new one. 409 `invitation_used` when the ' +
          `user has already joined. ${ownerRule}`,
        params: Params,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404, 409),
      },
    },
    async (request, reply) => {
      await invitations.withdraw(request.dashboard.businessId, request.params.id, request.dashboard.role);
      return reply.status(204).send(null);
    },
  );
};
