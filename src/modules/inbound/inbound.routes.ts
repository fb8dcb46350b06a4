import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';

/** Meta posts batches of up to a few hundred KB; 3 MB leaves room without inviting abuse. */
export const WEBHOOK_BODY_LIMIT = 3 * 1024 * 1024;

const tags = ['inbound'];

const VerifyQuery = Type.Object({
  'hub.mode': Type.Optional(Type.String({ maxLength: 50 })),
  'hub.verify_token': Type.Optional(Type.String({ maxLength: 256 })),
  'hub.challenge': Type.Optional(Type.String({ maxLength: 256 })),
});

const postDescription = `Meta's WhatsApp Cloud API notifications (messages and delivery receipts). Not under /external/v2 and
without an API key: the channel is found by entry[].changes[].value.metadata.phone_number_id and the
X-Hub-Signature-256 header (HMAC-SHA256 of the raw body with that channel's app_secret) is checked on the
bytes as received before anything is stored. 401 unauthorized when the header is missing or wrong or a
phone_number_id is not a channel's (nothing is stored); 400 when the body is not a WhatsApp notification.
A notification that names no number (an account update) has no channel to check it against: it answers
200 and nothing is stored.
Messages are stored once per provider message id (redeliveries answer 200 and change nothing). 503
unavailable, nothing stored, when a channel it names is deleted or moved to another business while it is
being stored: the provider delivers it again.`;

/** Provider webhooks (Meta calls these): top level, outside the API-key scope. */
export const inboundRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // The signature covers the bytes as sent: keep them raw, whatever the content type says.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) =>
    done(null, body),
  );

  app.get(
    '/channels/whatsapp/webhook',
    {
      schema: {
        tags,
        summary: "Meta's webhook verification (hub.challenge)",
        description:
          "Answers 200 with hub.challenge as text/plain when hub.mode is subscribe and hub.verify_token is a WhatsApp channel's verify_token; 403 otherwise.",
        querystring: VerifyQuery,
        response: responses(
          { 200: { description: 'the hub.challenge', content: { 'text/plain': { schema: Type.String() } } } },
          400,
          403,
        ),
      },
    },
    async (request, reply) => {
      const challenge = await app.services.inbound.verifyWhatsAppSubscription(request.query);
      return reply.type('text/plain; charset=utf-8').send(challenge);
    },
  );

  app.post(
    '/channels/whatsapp/webhook',
    {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      schema: {
        tags,
        summary: 'WhatsApp Cloud API notifications (signed by Meta)',
        description: postDescription,
        response: responses({ 200: Type.Object({ success: Type.Boolean() }) }, 400, 401, 413, 503),
      },
    },
    async (request) => {
      if (!Buffer.isBuffer(request.body)) throw new AppError(400, 'validation_error', 'empty notification body');
      const summary = await app.services.inbound
        .receiveWhatsApp(request.body, request.headers)
        .catch((err: unknown) => {
          // A refused notification usually means a misconfigured secret: worth a line in the log.
          if (err instanceof AppError && err.status === 401)
            request.log.warn({ reason: err.message }, 'whatsapp notification refused');
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
      return { success: true };
    },
  );
};
