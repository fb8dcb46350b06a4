import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { HEADER_MASK } from './webhook-header-secrets.ts';
import {
  CreateWebhookBody,
  DeliveriesPage,
  DeliveriesQuery,
  Delivery,
  DeliveryParams,
  UpdateWebhookBody,
  Webhook,
  WebhookItemParams,
  WebhookWithSecret,
} from './webhooks.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];
const One = Type.Object({ webhook: Webhook });

/** What creating a webhook means: shared by the operator API and the dashboard. */
export const createDescription = `Registers an endpoint for \`message_created\` (the body every call carries is documented under
\`webhooks.message_created\` of this document). Calls are signed after Standard Webhooks: \`webhook-id\` (the same on every
attempt of one delivery: dedupe on it), \`webhook-timestamp\` (Unix seconds of the attempt) and \`webhook-signature\`
(\`v1,<base64 HMAC-SHA256 of "id.timestamp.body">\` with the secret; two entries while a rotated secret overlaps).
Custom headers are sent too and cannot replace these, \`content-type\` or connection headers (400). Their values are
stored encrypted and every answer, this one included, shows them masked (\`${HEADER_MASK}\` and their last 4 characters).
A 2xx answer is success; network errors, no answer within 15 s, 408, 429 and 5xx are retried after about 5 s, 5 min,
30 min, 2 h, 5 h, 10 h and 10 h (±10 % jitter, never sooner than a Retry-After asks), then given up; redirects are not
followed and other 4xx are final; 410 disables the webhook, and so does failing without a success for 5 days
(\`enabled: false\` with \`disabled_reason\`). Deliveries of one conversation go out in message order. Payload media
URLs expire 120 minutes after the delivery was created (retries reuse them): renew them with GET /external/v2/media/:id.
The URL must be http(s) and resolve only to public addresses (checked now and before every attempt, and on the
connected socket) unless the service runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true. The secret is shown only here.
409 beyond 20 webhooks per business.`;

/** What editing a webhook means: shared by the operator API and the dashboard. */
export const updateDescription = `Re-enabling clears \`disabled_reason\` and sends the deliveries held while it was disabled.
\`headers\`, when sent, replaces the whole set of custom headers: a header sent with a value gets that value; one sent
with the masked value read back (\`${HEADER_MASK}\` and the last 4 characters, names compared without case) keeps its stored value;
one left out is removed, and \`{}\` removes them all. A masked value for a header that has no stored value, or that is
not the mask of the stored one (it changed since it was read), is refused with 400.`;

export const rotateDescription =
  'Answers the new secret (shown once). For 24 hours calls carry signatures with both the new and the old secret.';

export const deliveriesDescription =
  'Each entry is one attempt; `id` is the delivery (its webhook-id), shared by its attempts. Kept 30 days. Page with `next_cursor`.';

export const redeliverDescription =
  'Same payload and webhook-id, a fresh retry schedule: the delivery is tried again at once, and that try is logged as ' +
  'its next attempt (not a new delivery). 409 while it is being sent or when the webhook is disabled.';

/** Operator routes for the webhooks of a business, their delivery log and redeliveries. */
export const webhooksAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { webhooks } = app.services;
  const service = webhooks.service;

  app.post(
    '/businesses/:bid/webhooks',
    {
      schema: {
        tags,
        security,
        summary: 'Create a webhook (its secret is shown only in this answer)',
        description: createDescription,
        params: BusinessParams,
        body: CreateWebhookBody,
        response: responses({ 201: WebhookWithSecret }, 400, 401, 404, 409),
      },
    },
    async (request, reply) => reply.status(201).send(await service.create(request.params.bid, request.body)),
  );

  app.get(
    '/businesses/:bid/webhooks',
    {
      schema: {
        tags,
        security,
        summary: 'List the webhooks of the business, oldest first (never their secrets)',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ webhooks: Type.Array(Webhook) }) }, 400, 401, 404),
      },
    },
    async (request) => ({ webhooks: await service.list(request.params.bid, request.query.limit ?? 100) }),
  );

  app.get(
    '/businesses/:bid/webhooks/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Read a webhook',
        params: WebhookItemParams,
        response: responses({ 200: One }, 400, 401, 404),
      },
    },
    async (request) => ({ webhook: await service.read(request.params.bid, request.params.id) }),
  );

  app.patch(
    '/businesses/:bid/webhooks/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Edit, enable or disable a webhook',
        description: updateDescription,
        params: WebhookItemParams,
        body: UpdateWebhookBody,
        response: responses({ 200: One }, 400, 401, 404),
      },
    },
    async (request) => ({ webhook: await service.update(request.params.bid, request.params.id, request.body) }),
  );

  app.delete(
    '/businesses/:bid/webhooks/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Delete a webhook with its pending deliveries and log',
        params: WebhookItemParams,
        response: responses({ 200: Type.Object({ success: Type.Boolean() }) }, 400, 401, 404),
      },
    },
    async (request) => service.remove(request.params.bid, request.params.id),
  );

  app.post(
    '/businesses/:bid/webhooks/:id/rotate-secret',
    {
      schema: {
        tags,
        security,
        summary: 'Rotate the signing secret',
        description: rotateDescription,
        params: WebhookItemParams,
        response: responses({ 200: WebhookWithSecret }, 400, 401, 404),
      },
    },
    async (request) => service.rotateSecret(request.params.bid, request.params.id),
  );

  app.get(
    '/businesses/:bid/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        security,
        summary: 'Delivery log: every attempt, newest first',
        description: deliveriesDescription,
        params: WebhookItemParams,
        querystring: DeliveriesQuery,
        response: responses({ 200: DeliveriesPage }, 400, 401, 404),
      },
    },
    async (request) =>
      service.attempts(request.params.bid, request.params.id, request.query.limit ?? 50, request.query.cursor),
  );

  app.post(
    '/businesses/:bid/webhooks/:id/deliveries/:deliveryId/redeliver',
    {
      schema: {
        tags,
        security,
        summary: 'Send a delivery again now',
        description: redeliverDescription,
        params: DeliveryParams,
        response: responses({ 202: Type.Object({ delivery: Delivery }) }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply
        .status(202)
        .send({ delivery: await service.redeliver(request.params.bid, request.params.id, request.params.deliveryId) }),
  );
};
