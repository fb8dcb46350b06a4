import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { sendJsonText } from '../../http/json-text.ts';
import { EventsExportPage, EventsExportQuery, MessagesExportPage, MessagesExportQuery } from './exports.schemas.ts';

const security = [{ apiKey: [] }];
const paging =
  'Oldest first, keyset-paged on (created_at, id): repeat with each next_cursor (and the same since, until, channel' +
  ' and types) until it is null; a page may hold fewer than limit items. The first page fixes the window (until' +
  ' default now), so records arriving during a walk at later times are served exactly once. A cursor is signed and' +
  ' bound to the business and the filters: a changed or foreign cursor answers 400. since and until at most 31 days' +
  ' apart. For incremental sync request again from the last stored created_at minus a few minutes and skip ids' +
  ' already held. Every answer carries RateLimit-Policy and RateLimit headers; beyond the limit 429 with Retry-After.';

/** The export endpoints: every message and every event of the business in a window. */
export const exportsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/messages',
    {
      config: { rateGroup: 'exports' },
      schema: {
        tags: ['exports'],
        security,
        summary: "Export the business's messages in a date range",
        description:
          `${paging} Limit: 120 requests per minute per business, shared with GET /contacts/:uuid/timeline. ` +
          'Left out: conversations of test contacts, internal chats, WhatsApp groups; a message recorded by both the ' +
          'WhatsApp Cloud API channel and the web-client channel of one number appears once, under whatsapp.',
        querystring: MessagesExportQuery,
        response: responses({ 200: MessagesExportPage }, 400, 401, 429),
      },
    },
    async (request, reply) =>
      sendJsonText(reply, await app.services.exports.messages(request.businessId, request.query)),
  );

  app.get(
    '/events',
    {
      config: { rateGroup: 'events' },
      schema: {
        tags: ['exports'],
        security,
        summary: 'Export what happened to conversations and contacts in a date range',
        description:
          `${paging} Limit: 120 requests per minute per business, counted apart from GET /messages. An unknown value in ` +
          'types answers 400; a channel filter leaves out contact_field_changed (it has no channel). Left out: test ' +
          'contacts, internal chats, WhatsApp groups and internal platform events.',
        querystring: EventsExportQuery,
        response: responses({ 200: EventsExportPage }, 400, 401, 429),
      },
    },
    async (request, reply) => sendJsonText(reply, await app.services.exports.events(request.businessId, request.query)),
  );
};
