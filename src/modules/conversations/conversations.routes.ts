import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { sendJsonText } from '../../http/json-text.ts';
import { ConversationLookup, ConversationLookupQuery } from './conversations.schemas.ts';

const security = [{ apiKey: [] }];

/** Public conversation lookup. */
export const conversationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/conversations',
    {
      schema: {
        tags: ['conversations'],
        security,
        summary: "Look up a contact's conversation and its latest messages",
        description:
          'Identifies one contact by phone and/or a custom contact field (field_key with field_value); when both are sent ' +
          'the contact must match both. 400 without a lookup method, with only one of field_key/field_value, or with a ' +
          'field_key the business has not defined; 404 when no contact or no conversation matches; 409 when several ' +
          'contacts match or the contact has several conversations (details name them). Messages: the most recent ' +
          'message_limit ones, oldest first.',
        querystring: ConversationLookupQuery,
        response: responses({ 200: ConversationLookup }, 400, 401, 404, 409),
      },
    },
    async (request, reply) => {
      const answer = await app.services.conversations.lookup(request.businessId, request.query);
      return 'json' in answer ? sendJsonText(reply, answer.json) : answer;
    },
  );
};
