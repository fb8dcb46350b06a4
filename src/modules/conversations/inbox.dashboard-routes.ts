import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import {
  ConversationDetail,
  InboxPage,
  InboxQuery,
  ReadAnswer,
  ReadBody,
  UnreadTotal,
  INBOX_LIMIT_DEFAULT,
  INBOX_LIMIT_MAX,
} from './inbox.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const ConversationParams = Type.Object({ id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

/** The inbox of the session's business, as the signed-in user sees it (docs/ARCHITECTURE.md#the-inbox). */
export const dashboardInboxRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const inbox = app.services.inbox;
  const viewer = (request: { dashboard: { userId: string } }) => ({ userId: request.dashboard.userId });

  app.get(
    '/conversations',
    {
      schema: {
        tags,
        security,
        summary: "The inbox: the business's conversations, newest activity first",
        description:
          'Open conversations unless status=closed; filters combine (all must match). Activity is the last message, ' +
          `else the creation. Pages of limit conversations (default ${INBOX_LIMIT_DEFAULT}, max ${INBOX_LIMIT_MAX}): ` +
          'repeat with next_cursor, and the same filters, until it is null. Each row carries the unread count of the ' +
          'signed-in user. 400 for an assignee that is no user or team of the business, a team that is no team of it, ' +
          'or a cursor of other filters.',
        querystring: InboxQuery,
        response: responses({ 200: InboxPage }, 400, 401),
      },
    },
    async (request) => inbox.list(request.dashboard.businessId, viewer(request), request.query),
  );

  app.get(
    '/conversations/:id',
    {
      schema: {
        tags,
        security,
        summary: 'One conversation as the inbox shows it, with its contact',
        description: "Open or closed. 404 when the conversation is not the business's.",
        params: ConversationParams,
        response: responses({ 200: ConversationDetail }, 400, 401, 404),
      },
    },
    async (request) => inbox.get(request.dashboard.businessId, viewer(request), request.params.id),
  );

  app.post(
    '/conversations/:id/read',
    {
      schema: {
        tags,
        security,
        summary: "Move the signed-in user's read position in a conversation",
        description:
          'To message_id, else to the latest message; the position only moves forward, so a page opened earlier ' +
          'never marks messages unread again. Answers the position and what is left unread. 404 when the ' +
          "conversation is not the business's, or message_id is not one of its messages.",
        params: ConversationParams,
        body: ReadBody,
        response: responses({ 200: ReadAnswer }, 400, 401, 404),
      },
    },
    async (request) => inbox.markRead(request.dashboard.businessId, viewer(request), request.params.id, request.body),
  );

  app.get(
    '/unread',
    {
      schema: {
        tags,
        security,
        summary: 'The number of conversations with unread messages, for the sidebar',
        response: responses({ 200: UnreadTotal }, 401),
      },
    },
    async (request) => inbox.unread(request.dashboard.businessId, viewer(request)),
  );
};
