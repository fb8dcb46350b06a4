import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';

/** The dashboard's typing signal: what the composer says while a team member writes. */
export const dashboardTypingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/conversations/:id/typing',
    {
      schema: {
        tags: ['dashboard'],
        security: [{ sessionCookie: [] }],
        summary: 'Say that you are writing in the conversation, or stopped',
        description:
          'Shown at once to the contact in the website widget and to the team in the live stream (`event: typing`); ' +
          'nothing is stored. The dashboard sends `typing: true` at most every few seconds while you write and ' +
          '`false` when you stop or send.',
        params: Type.Object({ id: Uuid }, { additionalProperties: false }),
        body: Type.Object({ typing: Type.Boolean() }, { additionalProperties: false }),
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      const { businessId, userId } = request.dashboard;
      await app.services.typing.team(businessId, userId, request.params.id, request.body.typing);
      return reply.code(204).send(null);
    },
  );
};
