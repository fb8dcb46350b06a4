import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { idempotencyClaimOf } from '../../http/idempotency.ts';
import { ComposeAnswer, ConversationParams, ReplyAnswer, ReplyBody } from './replies.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];

/** What a team member writes in a conversation, and what the reply box may send now. */
export const dashboardReplyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/conversations/:id/messages',
    {
      config: { idempotency: 'dashboard.conversations.messages' },
      schema: {
        tags,
        security,
        summary: 'Reply in a conversation as the signed-in user',
        description:
          "Sends `{text}` or a template (`{template_id, variables}`) through the conversation's channel to its contact, " +
          "with an optional `reply_to` (a message of this conversation, quoted in the contact's app when the channel " +
          "knows its id). The message is stored as the user's " +
          '(`sender_type` human, `user`), is delivered like a public API send, and fires no `message_created` webhook. ' +
          'Outside the service window a text answers 400 `template_required`, as POST /external/v2/messages/send does ' +
          '(GET .../compose lists the templates); a contact ' +
          'who opted out answers 400 `blocked`; a template variable missing, 400 `template_variable_missing`. A closed ' +
          'conversation is reopened (conversation_unarchived by the user). Answers 202 with the message as the thread shows ' +
          'it. An `Idempotency-Key` header (a UUID the page makes per message) makes a retry answer the first send instead of ' +
          'sending twice. Any role may reply.',
        params: ConversationParams,
        body: ReplyBody,
        response: responses({ 202: ReplyAnswer }, 400, 401, 403, 404, 409, 422),
      },
    },
    async (request, reply) =>
      reply
        .status(202)
        .send(
          await app.services.replies.reply(
            request.dashboard.businessId,
            request.dashboard.userId,
            request.params.id,
            request.body,
            idempotencyClaimOf(request),
          ),
        ),
  );

  app.get(
    '/conversations/:id/compose',
    {
      schema: {
        tags,
        security,
        summary: 'What the reply box may send now',
        description:
          'Whether the service window is open (free-form text allowed) and when it ends, and the templates the ' +
          "conversation's channel sends (any time).",
        params: ConversationParams,
        response: responses({ 200: ComposeAnswer }, 400, 401, 404, 409),
      },
    },
    async (request) => app.services.replies.compose(request.dashboard.businessId, request.params.id),
  );
};
