import sseModule, { type SSEPluginOptions } from '@fastify/sse';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import type { LiveSink } from './live.connection.ts';

const description =
  "Server-Sent Events of the session's business, for as long as the session lasts. Each domain event is one " +
  "frame: `id:` the event's id, `data:` `{id, type, conversation_id, subject_id, data, created_at}` (`type`: " +
  '`message_created`, `message_status_changed`, `message_changed`, `conversation_changed`, `contact_changed`; ' +
  '`data` null when too large: reload the subject). First, what the client missed after `Last-Event-ID` (the browser sends it when it ' +
  "reconnects), then `event: ready` (its `id` is the stream's position; `retry:` the reconnection delay). " +
  '`event: reset` says to reload every view: what was missed cannot be told (too old, too many, or an unknown id). ' +
  'A replay may repeat events the client has: apply them by id. A comment line comes every 15 s. ' +
  '429 `too_many_streams` past 5 open streams of one session; 503 when the process serves its most.';

// The package's module object is its plugin wrapped by fastify-plugin (its hooks apply to this
// scope's routes); its declarations type only the unwrapped `default`.
const fastifySse = sseModule as unknown as FastifyPluginAsync<SSEPluginOptions>;

/** `GET /dashboard/api/live`: the session's live stream (docs/ARCHITECTURE.md#the-live-stream). */
export const liveRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const hub = app.services.live;
  // @fastify/sse writes the frames, the heartbeat and the headers (no buffering by proxies), and
  // waits for the socket to drain before the next frame.
  await app.register(fastifySse, { heartbeatInterval: hub.heartbeatMs });

  app.get(
    '/live',
    {
      // The route always streams, whatever the Accept header asks: no negotiation.
      sse: { kind: 'manual' },
      schema: {
        tags: ['dashboard'],
        security: [{ sessionCookie: [] }],
        summary: 'Live updates of the business (Server-Sent Events)',
        description,
        querystring: Type.Object({}, { additionalProperties: false }),
        headers: Type.Object({
          'last-event-id': Type.Optional(
            Type.String({ pattern: '^[0-9]{1,15}$', description: 'the `id` of the last frame received' }),
          ),
        }),
        response: responses(
          { 200: { description: 'the stream', content: { 'text/event-stream': { schema: Type.String() } } } },
          400,
          401,
          429,
          503,
        ),
      },
    },
    async (request, reply) => {
      const { sessionId, userId, businessId } = request.dashboard;
      const sse = reply.sse;
      const sink: LiveSink = { send: (frame) => sse.send(frame), close: () => sse.close() };
      const connection = hub.open({ sessionId, userId, businessId }, sink);
      if (connection === 'session_limit')
        throw new AppError(429, 'too_many_streams', `this session has ${hub.limits.perSession} live streams open`);
      if (connection === 'process_limit') {
        reply.header('retry-after', '30');
        throw new AppError(503, 'unavailable', 'this server process serves its most live streams');
      }
      sse.keepAlive();
      sse.onClose(() => connection.end());
      const lastEventId = request.headers['last-event-id'];
      try {
        await connection.start(lastEventId === undefined ? undefined : Number(lastEventId));
      } catch (err) {
        connection.end();
        throw err;
      }
      // Committed as a stream before the handler returns (its first frame may still be queued), unless
      // the client left meanwhile.
      if (!connection.isEnded) sse.sendHeaders();
    },
  );
};
