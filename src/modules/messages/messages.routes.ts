import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses, UuidParams } from '../../http/common.schemas.ts';
import { ContactMessages, ContactMessagesQuery } from './messages.schemas.ts';

const security = [{ apiKey: [] }];

/** Public message reads of one contact. */
export const messagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/contacts/:uuid/messages',
    {
      schema: {
        tags: ['messages'],
        security,
        summary: 'Latest messages of a contact across all its conversations',
        description:
          'Newest first, up to limit (default 100, max 200). from/to: the addresses the channel recorded; when it did ' +
          'not (imported history), the contact side is its phone digits as WhatsApp records them (its email on the email channel) ' +
          "and the business side is the identifier of the conversation's channel, else the channel name. " +
          '404 when the contact does not exist in the business.',
        params: UuidParams,
        querystring: ContactMessagesQuery,
        response: responses({ 200: ContactMessages }, 400, 401, 404),
      },
    },
    async (request) => ({
      messages: await app.services.messages.listForContact(
        request.businessId,
        request.params.uuid,
        request.query.limit,
      ),
    }),
  );
};
