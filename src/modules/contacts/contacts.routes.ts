import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses, UuidParams } from '../../http/common.schemas.ts';
import {
  ContactCamelResponse,
  ContactPathLenient,
  ContactResponse,
  CreateContactBody,
  DeleteResponse,
  SearchQuery,
  SearchResponse,
  UpdateContactBody,
} from './contacts.schemas.ts';

const tags = ['contacts'];
const security = [{ apiKey: [] }];

/** Public contact endpoints (the merge and per-contact messages live in their own modules). */
export const contactsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const contacts = app.services.contacts;

  app.get(
    '/contacts',
    {
      schema: {
        tags,
        security,
        summary: 'Search contacts by email, phone or external_id',
        description:
          'At least one of email, phone, external_id. Returns every contact matching any of them (OR), oldest first, at most 50. ' +
          'Email matches in any case; phone (country code, digits) matches with or without the mobile 9 of Argentina and Chile and the ' +
          'legacy 1 of Mexico; emails and phones kept as aliases after a merge resolve to the surviving contact. ' +
          '400 without an identifier or with an invalid email or phone.',
        querystring: SearchQuery,
        response: responses({ 200: SearchResponse }, 400, 401),
      },
    },
    async (request) => contacts.search(request.businessId, request.query),
  );

  app.post(
    '/contacts',
    {
      schema: {
        tags,
        security,
        summary: 'Create a contact',
        description:
          'At least one of email, phone_number, external_id. phone_number is stored as digits with country code. ' +
          '409 conflict when one of the identifiers already belongs to a contact (details name the field and the contact_id).',
        body: CreateContactBody,
        response: responses({ 201: ContactResponse }, 400, 401, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ contact: await contacts.create(request.businessId, request.body) }),
  );

  app.get(
    '/contacts/:uuid',
    {
      schema: {
        tags,
        security,
        summary: 'Read a contact',
        params: UuidParams,
        response: responses({ 200: ContactResponse }, 400, 401, 404),
      },
    },
    async (request) => ({ contact: await contacts.get(request.businessId, request.params.uuid) }),
  );

  app.patch(
    '/contacts/:uuid',
    {
      schema: {
        tags,
        security,
        summary: 'Partially update a contact',
        description:
          'name is split into first name (first word) and last name (the rest); tags replace the list and are copied to the ' +
          "contact's conversations; custom_fields are merged key by key (null removes a key); assigned_user is the email of a " +
          'user of the business (400 when unknown); unassign_user true removes the assignee. The changed fields are recorded ' +
          'together as one contact_field_changed event.',
        params: UuidParams,
        body: UpdateContactBody,
        response: responses({ 200: ContactCamelResponse }, 400, 401, 404),
      },
    },
    async (request) => ({ contact: [await contacts.update(request.businessId, request.params.uuid, request.body)] }),
  );

  app.delete(
    '/contacts/:uuid',
    {
      schema: {
        tags,
        security,
        summary: 'Delete a contact with its conversations and messages',
        description: 'Cannot be undone; for duplicates prefer POST /contacts/merge, which keeps the history.',
        params: ContactPathLenient,
        response: responses({ 200: DeleteResponse }, 401, 404),
      },
    },
    async (request) => contacts.remove(request.businessId, request.params.uuid),
  );

  app.post(
    '/contacts/:uuid/conversation/close',
    {
      schema: {
        tags,
        security,
        summary: 'Close (archive) all conversations of a contact',
        description:
          'No body. Records one conversation_archived event per conversation closed; closedAt is the closing time.',
        params: ContactPathLenient,
        response: responses({ 200: ContactCamelResponse }, 401, 404),
      },
    },
    async (request) => ({ contact: [await contacts.closeConversations(request.businessId, request.params.uuid)] }),
  );
};
