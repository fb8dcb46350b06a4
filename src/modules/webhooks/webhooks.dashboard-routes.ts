import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import {
  createDescription,
  deliveriesDescription,
  redeliverDescription,
  rotateDescription,
  updateDescription,
} from './webhooks.routes.ts';
import {
  CreateWebhookBody,
  DeliveriesPage,
  DeliveriesQuery,
  Delivery,
  SessionDeliveryParams,
  SessionWebhookParams,
  UpdateWebhookBody,
  Webhook,
  WebhookWithSecret,
} from './webhooks.schemas.ts';
import { MAX_WEBHOOKS } from './webhooks.service.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const One = Type.Object({ webhook: Webhook });

/**
 * The event triggers (message_created webhooks) of the session's business, for admins and owners
 * (Dev Tools): the operator API's service, so its rules (masked headers, the private-target policy,
 * secrets shown once) hold here unchanged.
 */
export const dashboardWebhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const service = app.services.webhooks.service;
  const preHandler = requireRole('admin');

  app.get(
    '/webhooks',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: `List the webhooks, oldest first (at most ${MAX_WEBHOOKS}; never their secrets)`,
        response: responses({ 200: Type.Object({ webhooks: Type.Array(Webhook) }) }, 401, 403),
      },
    },
    async (request) => ({ webhooks: await service.list(request.dashboard.businessId, MAX_WEBHOOKS) }),
  );

  app.post(
    '/webhooks',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Create a webhook (its secret is shown only in this answer)',
        description: createDescription,
        body: CreateWebhookBody,
        response: responses({ 201: WebhookWithSecret }, 400, 401, 403, 409),
      },
    },
    async (request, reply) => reply.status(201).send(await service.create(request.dashboard.businessId, request.body)),
  );

  app.get(
    '/webhooks/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Read a webhook',
        params: SessionWebhookParams,
        response: responses({ 200: One }, 400, 401, 403, 404),
      },
    },
    async (request) => ({ webhook: await service.read(request.dashboard.businessId, request.params.id) }),
  );

  app.patch(
    '/webhooks/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Edit, enable or disable a webhook',
        description: updateDescription,
        params: SessionWebhookParams,
        body: UpdateWebhookBody,
        response: responses({ 200: One }, 400, 401, 403, 404),
      },
    },
    async (request) => ({
      webhook: await service.update(request.dashboard.businessId, request.params.id, request.body),
    }),
  );

  app.delete(
    '/webhooks/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Delete a webhook with its pending deliveries and log',
        params: SessionWebhookParams,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      await service.remove(request.dashboard.businessId, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Rotate the signing secret (the new one is shown only in this answer)',
        description: rotateDescription,
        params: SessionWebhookParams,
        response: responses({ 200: WebhookWithSecret }, 400, 401, 403, 404),
      },
    },
    async (request) => service.rotateSecret(request.dashboard.businessId, request.params.id),
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Delivery log: every attempt, newest first',
        description: deliveriesDescription,
        params: SessionWebhookParams,
        querystring: DeliveriesQuery,
        response: responses({ 200: DeliveriesPage }, 400, 401, 403, 404),
      },
    },
    async (request) =>
      service.attempts(
        request.dashboard.businessId,
        request.params.id,
        request.query.limit ?? 50,
        request.query.cursor,
      ),
  );

  app.post(
    '/webhooks/:id/deliveries/:deliveryId/redeliver',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Send a delivery again now',
        description: redeliverDescription,
        params: SessionDeliveryParams,
        response: responses({ 202: Type.Object({ delivery: Delivery }) }, 400, 401, 403, 404, 409),
      },
    },
    async (request, reply) =>
      reply.status(202).send({
        delivery: await service.redeliver(request.dashboard.businessId, request.params.id, request.params.deliveryId),
      }),
  );
};
