import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessItemParams, BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { CreateTemplateBody, Template } from './templates.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

/** Operator routes for the message templates of a business (used by POST /send-template). */
export const templatesAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { templates } = app.services;

  app.post(
    '/businesses/:bid/templates',
    {
      schema: {
        tags,
        security,
        summary: 'Create a message template',
        description:
          '`body` uses positional `{{1}}`, `{{2}}` ... or named `{{first_name}}` placeholders, not both; `variables` lists them in order. ' +
          'A URL button may end in one `{{1}}`, filled per send. 409 when the business has a template of this name and language; 404 for a channel of another business.',
        params: BusinessParams,
        body: CreateTemplateBody,
        response: responses({ 201: Type.Object({ template: Template }) }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ template: await templates.create(request.params.bid, request.body) }),
  );

  app.get(
    '/businesses/:bid/templates',
    {
      schema: {
        tags,
        security,
        summary: 'List the templates of the business',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ templates: Type.Array(Template) }) }, 400, 401, 404),
      },
    },
    async (request) => ({ templates: await templates.list(request.params.bid, request.query.limit ?? 100) }),
  );

  app.get(
    '/businesses/:bid/templates/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Read a template',
        params: BusinessItemParams,
        response: responses({ 200: Type.Object({ template: Template }) }, 400, 401, 404),
      },
    },
    async (request) => ({ template: await templates.read(request.params.bid, request.params.id) }),
  );

  app.delete(
    '/businesses/:bid/templates/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Delete a template; messages sent with it keep their text',
        params: BusinessItemParams,
        response: responses({ 200: Type.Object({ success: Type.Boolean() }) }, 400, 401, 404),
      },
    },
    async (request) => {
      await templates.delete(request.params.bid, request.params.id);
      return { success: true };
    },
  );
};
