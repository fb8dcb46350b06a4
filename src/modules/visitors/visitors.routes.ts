import sseModule, { type SSEPluginOptions } from '@fastify/sse';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import { VISITOR_STREAM_LIMITS } from './visitor-streams.ts';
import { MAX_UPLOAD_BYTES } from './visitor-uploads.ts';

const tags = ['widget'];
const security = [{ visitorToken: [] }];

const Params = Type.Object(
  { widget: Type.String({ pattern: '^[A-Za-z0-9_-]{8,64}$', description: "the widget's public id (data-channel)" }) },
  { additionalProperties: false },
);

const Message = Type.Object({
  id: Type.String({ format: 'uuid' }),
  client_id: Type.Union([Type.String(), Type.Null()], {
    description: "the widget's id of a message the visitor wrote",
  }),
  from: Type.Union([Type.Literal('visitor'), Type.Literal('business')]),
  text: Type.String(),
  attachments: Type.Array(
    Type.Object({
      kind: Type.String({ description: 'image, video, audio, document or sticker' }),
      url: Type.String({ description: 'a signed address of the file (valid 2 hours), or the URL the business sent' }),
      filename: Type.Union([Type.String(), Type.Null()]),
      content_type: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  status: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

const Auth = Type.Object({
  authorization: Type.Optional(Type.String({ maxLength: 2000, description: 'Bearer <visitor token>' })),
});

const fastifySse = sseModule as unknown as FastifyPluginAsync<SSEPluginOptions>;

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return header?.startsWith('Bearer ') ? header.slice(7) : undefined;
}

/**
 * The website widget's routes (`/widget/v1/:widget/...`), called by the widget in visitors'
 * browsers: authenticated by the visitor token that `sessions` hands out, never by an API key, and
 * answered only to the channel's allowed origins.
 */
export const visitorsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const visitors = app.services.visitors;
  await app.register(fastifySse, { heartbeatInterval: 15_000 });
  // A file upload's body is the file itself, whatever type the browser names (checked from its bytes).
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_UPLOAD_BYTES }, (_request, body, done) =>
    done(null, body),
  );

  // CORS preflight: the widget sends its token in Authorization, so browsers ask first.
  app.options(
    '/:widget/*',
    { schema: { hide: true, params: Type.Object({ widget: Type.String(), '*': Type.String() }) } },
    // The surface's hook checked the Origin (widget-api.ts).
    async (_request, reply) =>
      reply
        .header('access-control-allow-methods', 'GET, POST')
        .header('access-control-allow-headers', 'authorization, content-type')
        .header('access-control-max-age', '600')
        .code(204)
        .send(),
  );

  app.post(
    '/:widget/sessions',
    {
      config: { visitorLimit: 'session' },
      schema: {
        tags,
        summary: "Open a visitor's session",
        description:
          "A visitor's session on the widget: the one `token` names (kept across reloads and tabs), a new one, or, with " +
          "`identity`, the signed-in customer's (the same contact on every device). `identity.hash` is the hex " +
          "HMAC-SHA256 of `external_id` under the channel's `identity_secret`, computed on the site's server. 401 when it " +
          "does not match; 403 when the Origin is not one of the channel's allowed origins; 404 for an unknown widget. " +
          "The identity's name, email and phone replace the contact's (the site vouched for them); what the visitor " +
          'types (`/profile`) only fills empty fields.',
        params: Params,
        body: Type.Object(
          {
            token: Type.Optional(Type.String({ maxLength: 2000 })),
            identity: Type.Optional(
              Type.Object(
                {
                  external_id: Type.String({ minLength: 1, maxLength: 255 }),
                  hash: Type.String({ minLength: 1, maxLength: 128 }),
                  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
                  email: Type.Optional(Type.String({ minLength: 3, maxLength: 254 })),
                  phone: Type.Optional(Type.String({ minLength: 4, maxLength: 32, description: 'with country code' })),
                },
                { additionalProperties: false },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: responses(
          {
            200: Type.Object({
              token: Type.String(),
              visitor_id: Type.String(),
              verified: Type.Boolean(),
              messages: Type.Array(Message),
              online: Type.Boolean({ description: 'someone of the team used the dashboard in the last 5 minutes' }),
              away_message: Type.Union([Type.String(), Type.Null()], {
                description: "the channel's line for when no one is around",
              }),
            }),
          },
          400,
          401,
          403,
          404,
          429,
        ),
      },
    },
    async (request) => visitors.startSession(request.params.widget, request.headers.origin, request.body),
  );

  app.post(
    '/:widget/messages',
    {
      config: { visitorLimit: 'write' },
      schema: {
        tags,
        security,
        summary: 'Write as the visitor',
        description:
          'Stored once per `client_id`; it reaches the inbox, the webhooks and the AI agent as any inbound message.',
        params: Params,
        headers: Auth,
        body: Type.Object(
          {
            client_id: Type.String({ format: 'uuid' }),
            text: Type.String({ minLength: 1, maxLength: 4096 }),
          },
          { additionalProperties: false },
        ),
        response: responses({ 202: Type.Object({ accepted: Type.Boolean() }) }, 400, 401, 403, 404, 429),
      },
    },
    async (request, reply) => {
      const { channel, claims } = await visitors.visitor(
        request.params.widget,
        request.headers.origin,
        bearer(request),
      );
      await visitors.write(channel, claims, request.body.client_id, request.body.text);
      return reply.code(202).send({ accepted: true });
    },
  );

  app.post(
    '/:widget/files',
    {
      config: { visitorLimit: 'write' },
      bodyLimit: MAX_UPLOAD_BYTES,
      schema: {
        tags,
        security,
        summary: 'Send a file as the visitor',
        description:
          `The request's body is the file (any content type; at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB, 413 past it). ` +
          'Its type is read from its bytes: images (PNG, JPEG, GIF, WebP), PDF, Word and Excel documents, MP3, Ogg and ' +
          'M4A audio, MP4 and WebM video; any other answers 415. Stored once per `client_id`.',
        params: Params,
        headers: Auth,
        querystring: Type.Object(
          {
            client_id: Type.String({ format: 'uuid' }),
            filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
          },
          { additionalProperties: false },
        ),
        body: Type.Unknown({ description: 'the file' }),
        response: responses({ 202: Type.Object({ accepted: Type.Boolean() }) }, 400, 401, 403, 404, 413, 415, 429),
      },
    },
    async (request, reply) => {
      const { channel, claims } = await visitors.visitor(
        request.params.widget,
        request.headers.origin,
        bearer(request),
      );
      if (!Buffer.isBuffer(request.body)) throw new AppError(400, 'validation_error', 'the body must be the file');
      await visitors.upload(channel, claims, request.query.client_id, {
        bytes: request.body,
        filename: request.query.filename ?? null,
      });
      return reply.code(202).send({ accepted: true });
    },
  );

  app.post(
    '/:widget/profile',
    {
      config: { visitorLimit: 'write' },
      schema: {
        tags,
        security,
        summary: 'What the visitor says of themselves',
        description:
          'The email address (or name, or phone) the widget asks for when no one of the team is around, so the team ' +
          "can answer there. It fills the contact's empty fields only, never replacing what the site or the team set " +
          '(`saved` says whether anything changed). 409 before the visitor has written a message.',
        params: Params,
        headers: Auth,
        body: Type.Object(
          {
            email: Type.Optional(Type.String({ minLength: 3, maxLength: 254 })),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
            phone: Type.Optional(Type.String({ minLength: 4, maxLength: 32, description: 'with country code' })),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: responses({ 200: Type.Object({ saved: Type.Boolean() }) }, 400, 401, 403, 404, 409, 429),
      },
    },
    async (request) => {
      const { channel, claims } = await visitors.visitor(
        request.params.widget,
        request.headers.origin,
        bearer(request),
      );
      return visitors.describe(channel, claims, request.body);
    },
  );

  app.post(
    '/:widget/typing',
    {
      config: { visitorLimit: 'typing' },
      schema: {
        tags,
        security,
        summary: 'Say that the visitor is writing, or stopped',
        description:
          "Shown at once in the team's open dashboards; nothing is stored, and nothing is said before the visitor's " +
          'first message. The widget says it at most every few seconds.',
        params: Params,
        headers: Auth,
        body: Type.Object({ typing: Type.Boolean() }, { additionalProperties: false }),
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404, 429),
      },
    },
    async (request, reply) => {
      const { claims } = await visitors.visitor(request.params.widget, request.headers.origin, bearer(request));
      await visitors.typing(claims, request.body.typing);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/:widget/receipts',
    {
      config: { visitorLimit: 'write' },
      schema: {
        tags,
        security,
        summary: "The business's messages the widget received or showed",
        params: Params,
        headers: Auth,
        body: Type.Object(
          {
            message_ids: Type.Array(Type.String({ format: 'uuid' }), { minItems: 1, maxItems: 100 }),
            status: Type.Union([Type.Literal('delivered'), Type.Literal('read')]),
          },
          { additionalProperties: false },
        ),
        response: responses({ 200: Type.Object({ moved: Type.Integer() }) }, 400, 401, 403, 404, 429),
      },
    },
    async (request) => {
      const { channel, claims } = await visitors.visitor(
        request.params.widget,
        request.headers.origin,
        bearer(request),
      );
      const moved = await visitors.acknowledge(channel, claims, request.body.message_ids, request.body.status);
      return { moved };
    },
  );

  app.get(
    '/:widget/stream',
    {
      sse: { kind: 'manual' },
      schema: {
        tags,
        security,
        summary: "The visitor's messages as they come (Server-Sent Events)",
        description:
          "Frames `event: messages`, data `{messages: [...]}`: the business's replies once handed over, and the " +
          "visitor's own messages (other tabs); `event: typing`, data `{typing, name}`: a team member is writing to " +
          'the visitor, or stopped. On reconnecting the widget reads its history again with `sessions`.',
        params: Params,
        headers: Auth,
        response: responses(
          { 200: { description: 'the stream', content: { 'text/event-stream': { schema: Type.String() } } } },
          401,
          403,
          404,
          429,
          503,
        ),
      },
    },
    async (request, reply) => {
      const { claims } = await visitors.visitor(request.params.widget, request.headers.origin, bearer(request));
      const sse = reply.sse;
      const counted = visitors.streams.open(claims, { close: () => sse.close() });
      if (counted === 'visitor_limit')
        throw new AppError(
          429,
          'too_many_streams',
          `this visitor has ${VISITOR_STREAM_LIMITS.perVisitor} streams open`,
        );
      if (counted === 'process_limit') {
        reply.header('retry-after', '30');
        throw new AppError(503, 'unavailable', 'this server process serves its most streams');
      }
      const stop = visitors.follow(
        claims,
        (messages) => void sse.send({ event: 'messages', data: { messages } }).catch(() => sse.close()),
        (err) => {
          request.log.error({ err }, 'reading a visitor stream failed');
          sse.close();
        },
        (typing) => void sse.send({ event: 'typing', data: typing }).catch(() => sse.close()),
      );
      sse.keepAlive();
      sse.onClose(() => {
        stop();
        counted();
      });
      await sse.send({ event: 'ready', data: {} });
    },
  );
};
