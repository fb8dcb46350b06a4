import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { THREAD_LIMIT_DEFAULT, THREAD_LIMIT_MAX, ThreadPage, ThreadQuery } from './thread.schemas.ts';

/** The thread of a conversation of the session's business (docs/ARCHITECTURE.md#the-inbox). */
export const dashboardThreadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/conversations/:id/thread',
    {
      schema: {
        tags: ['dashboard'],
        security: [{ sessionCookie: [] }],
        summary: "A conversation's messages and events, newest first",
        description:
          'Messages with what the page shows (files with signed addresses valid 120 minutes, location, contact ' +
          'cards, the quoted message, who sent it, its status and failure) and the events of manual control, ' +
          'transfers, AI agents, resolution and archive, merged on (created_at, id), newest first. Pages of limit ' +
          `items (default ${THREAD_LIMIT_DEFAULT}, max ${THREAD_LIMIT_MAX}); next_cursor reads the older ones. ` +
          "404 when the conversation is not the business's.",
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }, { additionalProperties: false }),
        querystring: ThreadQuery,
        response: responses({ 200: ThreadPage }, 400, 401, 404),
      },
    },
    async (request) => app.services.thread.list(request.dashboard.businessId, request.params.id, request.query),
  );
};
