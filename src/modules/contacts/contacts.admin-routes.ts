import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessParams } from '../admin/admin.schemas.ts';
import { ContactResponse, createContactFields } from './contacts.schemas.ts';

const CreateOperatorContactBody = Type.Object(
  {
    ...createContactFields,
    is_test: Type.Optional(
      Type.Boolean({ description: 'test contacts are left out of exports and cannot merge with real ones' }),
    ),
  },
  { additionalProperties: false, description: 'as POST /external/v2/contacts, plus is_test' },
);

/** Operator route creating a contact (test contacts included). */
export const contactsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/businesses/:bid/contacts',
    {
      schema: {
        tags: ['operator'],
        security: [{ adminToken: [] }],
        summary: 'Create a contact',
        description:
          'As POST /external/v2/contacts, plus is_test. 409 when an identifier already belongs to a contact.',
        params: BusinessParams,
        body: CreateOperatorContactBody,
        response: responses({ 201: ContactResponse }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ contact: await app.services.contacts.create(request.params.bid, request.body) }),
  );
};
