import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses, UuidParams } from '../../http/common.schemas.ts';
import { TimelinePage, TimelineQuery } from './timeline.schemas.ts';

/** The merged history of one contact. */
export const timelineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/contacts/:uuid/timeline',
    {
      config: { rateGroup: 'exports' },
      schema: {
        tags: ['exports'],
        security: [{ apiKey: [] }],
        summary: 'Messages and events of a contact, merged, newest first',
        description:
          'Messages in the export form with kind "message" and events as event records with kind "event", ordered by ' +
          '(created_at, id) descending across both; limit default 50, max 200; repeat with next_cursor until it is null ' +
          "(the cursor is signed and bound to the business and the contact). All the contact's conversations are shown; " +
          'a web-client copy of a Cloud API message appears once. Shares the 120 requests per minute of GET /messages; ' +
          'every answer carries RateLimit-Policy and RateLimit headers. 404 when the contact does not exist in the business.',
        params: UuidParams,
        querystring: TimelineQuery,
        response: responses({ 200: TimelinePage }, 400, 401, 404, 429),
      },
    },
    async (request) => app.services.timeline.list(request.businessId, request.params.uuid, request.query),
  );
};
