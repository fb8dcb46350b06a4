import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { BusinessParams, ListQuery } from '../admin/admin.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

const CreateContactFieldBody = Type.Object(
  {
    key: Type.String({
      pattern: '^[a-z][a-z0-9_]{0,63}$',
      description: 'lower-case identifier, unique within the business; the custom_fields key it defines',
    }),
    name: Type.String({ minLength: 1, maxLength: 200, description: 'display name' }),
  },
  { additionalProperties: false },
);
const ContactField = Type.Object({ id: Uuid, key: Type.String(), name: Type.String() });

/** Operator routes for custom contact field definitions (what GET /conversations searches by with field_key). */
export const contactFieldsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/businesses/:bid/contact-fields',
    {
      schema: {
        tags,
        security,
        summary: 'Define a custom contact field',
        description: '409 when the business already defines this key.',
        params: BusinessParams,
        body: CreateContactFieldBody,
        response: responses({ 201: Type.Object({ contact_field: ContactField }) }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send({ contact_field: await app.services.contactFields.create(request.params.bid, request.body) }),
  );

  app.get(
    '/businesses/:bid/contact-fields',
    {
      schema: {
        tags,
        security,
        summary: 'List the custom contact fields of the business',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ contact_fields: Type.Array(ContactField) }) }, 400, 401, 404),
      },
    },
    async (request) => ({
      contact_fields: await app.services.contactFields.list(request.params.bid, request.query.limit ?? 100),
    }),
  );
};
