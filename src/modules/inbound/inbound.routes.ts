import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { webhookSegments, type WebhookKind } from '../../channels/registry.ts';
import { responses } from '../../http/common.schemas.ts';
import { AppError, notFound } from '../../http/errors.ts';
import { DomainError } from '../../lib/domain-errors.ts';

/** Meta posts batches of up to a few hundred KB; 3 MB leaves room without inviting abuse. */
export const WEBHOOK_BODY_LIMIT = 3 * 1024 * 1024;

const tags = ['inbound'];

/**
 * Provider webhooks (providers call these): top level, outside the API-key scope. One route,
 * `/channels/:provider/webhook`, for every provider kind notified by webhook (registry.ts), under its
 * kind and each alias its entry declares; each such path is also registered with the kind's own
 * schemas, so that it is validated and documented in the provider's words.
 */
export const inboundRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // The signature covers the bytes as sent: keep them raw, whatever the content type says.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) =>
    done(null, body),
  );

  const segments = webhookSegments();

  const handshake = async (webhook: WebhookKind, request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as Record<string, unknown>;
    const challenge = await app.services.inbound.verifySubscription(webhook.entry.kind, query);
    return reply.type('text/plain; charset=utf-8').send(challenge);
  };

  const receive = async (webhook: WebhookKind, request: FastifyRequest, reply: FastifyReply) => {
    if (!Buffer.isBuffer(request.body)) throw new AppError(400, 'validation_error', 'empty notification body');
    const provider = webhook.entry.kind;
    const summary = await app.services.inbound
      .receive(provider, request.body, request.headers, request.url)
      .catch((err: unknown) => {
        // A refused notification usually means a misconfigured secret: worth a line in the log.
        if (err instanceof DomainError && err.kind === 'unauthorized')
          request.log.warn({ provider, reason: err.message }, 'notification refused');
        throw err;
      });
    if (summary.unknownStatusIds.length > 0) {
      request.log.debug({ providerMessageIds: summary.unknownStatusIds }, 'receipts for unknown messages ignored');
    }
    for (const duplicate of summary.duplicateSends) {
      request.log.warn(
        duplicate,
        'the provider has two messages for one send: the recipient may have received it twice',
      );
    }
    if (summary.unrelayed?.length)
      request.log.info({ provider, replies: summary.unrelayed }, 'relayed replies not sent');
    const { answer } = webhook.transport;
    // The adapter's answer to this notification, when its provider is told what to do next in it.
    if (answer) return reply.type(answer.contentType).send(summary.answer ?? answer.body);
    return { success: true };
  };

  for (const [segment, webhook] of segments) {
    const url = `/channels/${segment}/webhook`;
    const { docs, handshake: subscription, answer } = webhook.transport;
    if (subscription) {
      app.get(
        url,
        {
          schema: {
            tags,
            summary: docs.handshake?.summary,
            description: docs.handshake?.description,
            querystring: subscription.query,
            response: responses(
              { 200: { description: 'the hub.challenge', content: { 'text/plain': { schema: Type.String() } } } },
              400,
              403,
            ),
          },
        },
        (request, reply) => handshake(webhook, request, reply),
      );
    }
    app.post(
      url,
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        schema: {
          tags,
          summary: docs.receive.summary,
          description: docs.receive.description,
          response: responses(
            {
              200: answer
                ? {
                    description: 'accepted',
                    content: { [answer.contentType.split(';')[0]]: { schema: Type.String() } },
                  }
                : Type.Object({ success: Type.Boolean() }),
            },
            400,
            401,
            413,
            503,
          ),
        },
      },
      (request, reply) => receive(webhook, request, reply),
    );
  }

  // Any other segment names no provider kind notified by webhook.
  const resolve = (provider: string): WebhookKind => {
    const webhook = segments.get(provider);
    if (!webhook) throw notFound('channel provider');
    return webhook;
  };
  const ProviderParams = Type.Object({ provider: Type.String({ maxLength: 100 }) });
  app.get('/channels/:provider/webhook', { schema: { hide: true, params: ProviderParams } }, (request, reply) =>
    handshake(resolve(request.params.provider), request, reply),
  );
  app.post(
    '/channels/:provider/webhook',
    { bodyLimit: WEBHOOK_BODY_LIMIT, schema: { hide: true, params: ProviderParams } },
    (request, reply) => receive(resolve(request.params.provider), request, reply),
  );
};
