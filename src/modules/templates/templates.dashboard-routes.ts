import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { CreateTemplateBody, Template } from './templates.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const Params = Type.Object({ id: Uuid }, { additionalProperties: false });
const One = Type.Object({ template: Template });
const rules =
  '`body` uses positional `{{1}}`, `{{2}}` ... or named `{{first_name}}` placeholders, not both; a URL button may ' +
  'end in one `{{1}}`. 409 when the business has another template of this name and language; 404 for a channel ' +
  'of another business.';

/** The message templates of the session's business, for admins and owners. */
export const dashboardTemplatesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { templates } = app.services;
  const preHandler = requireRole('admin');

  app.get(
    '/templates',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: "The business's templates, oldest first (at most 500; admins and owners)",
        response: responses({ 200: Type.Object({ templates: Type.Array(Template) }) }, 401, 403),
      },
    },
    async (request) => ({ templates: await templates.list(request.dashboard.businessId, 500) }),
  );

  app.post(
    '/templates',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Create a template (admins and owners)',
        description: rules,
        body: CreateTemplateBody,
        response: responses({ 201: One }, 400, 401, 403, 404, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ template: await templates.create(request.dashboard.businessId, request.body) }),
  );

  app.put(
    '/templates/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Replace a template (admins and owners)',
        description: `The whole definition, as for a new one. Messages already sent keep their text. ${rules}`,
        params: Params,
        body: CreateTemplateBody,
        response: responses({ 200: One }, 400, 401, 403, 404, 409),
      },
    },
    async (request) => ({
      template: await templates.replace(request.dashboard.businessId, request.params.id, request.body),
    }),
  );

  app.delete(
    '/templates/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Delete a template (admins and owners)',
        description: 'Messages sent with it keep their text.',
        params: Params,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      await templates.delete(request.dashboard.businessId, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
