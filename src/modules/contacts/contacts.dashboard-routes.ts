import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses, UuidParams } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { MergeBody, MergeResult } from '../contact-merge/contact-merge.schemas.ts';
import { ContactDeletion, ContactList, ContactListQuery, ContactProfile } from './contacts.dashboard-schemas.ts';
import { DeleteResponse, UpdateContactBody } from './contacts.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];

/**
 * The session's business's contacts: listed and searched, read, edited, merged and deleted by the
 * same services, with the same rules, as the public API's routes; deleted by admins and owners only.
 */
export const dashboardContactsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { contacts, contactMerge, dashboardContacts } = app.services;
  // Deleting a contact takes its whole history with it: admins and owners only.
  const admins = requireRole('admin');

  app.get(
    '/contacts',
    {
      schema: {
        tags,
        security,
        summary: 'List contacts newest first, or find them by an email, phone or external id',
        description:
          "Without q, pages of the business's contacts, newest first, by next_cursor. With q, the contacts it " +
          'identifies as an email (when it has an @), a phone (when it reads as one) or an external id, by the rules of ' +
          'GET /external/v2/contacts: aliases find the survivor of a merge, at most 50, one page.',
        querystring: ContactListQuery,
        response: responses({ 200: ContactList }, 400, 401),
      },
    },
    async (request) => dashboardContacts.list(request.dashboard.businessId, request.query),
  );

  app.post(
    '/contacts/merge',
    {
      schema: {
        tags,
        security,
        summary: 'Merge a duplicate contact into another (cannot be undone)',
        description:
          'The rules of POST /external/v2/contacts/merge; the contact_field_changed event names the user who merged.',
        body: MergeBody,
        response: responses({ 200: MergeResult }, 400, 401, 403, 404),
      },
    },
    async (request) =>
      contactMerge.merge(request.dashboard.businessId, request.body, {
        actorType: 'human',
        userId: request.dashboard.userId,
      }),
  );

  app.get(
    '/contacts/:uuid',
    {
      schema: {
        tags,
        security,
        summary: "A contact's page: its fields, custom fields by their definitions, aliases and conversations",
        params: UuidParams,
        response: responses({ 200: ContactProfile }, 400, 401, 404),
      },
    },
    async (request) => dashboardContacts.profile(request.dashboard.businessId, request.params.uuid),
  );

  app.patch(
    '/contacts/:uuid',
    {
      schema: {
        tags,
        security,
        summary: 'Edit a contact',
        description:
          'The body and rules of PATCH /external/v2/contacts/:uuid; the contact_field_changed event (source dashboard) ' +
          "names the user. Answers the contact's page.",
        params: UuidParams,
        body: UpdateContactBody,
        response: responses({ 200: ContactProfile }, 400, 401, 403, 404),
      },
    },
    async (request) => {
      const { businessId, userId } = request.dashboard;
      await contacts.update(businessId, request.params.uuid, request.body, {
        actorType: 'human',
        userId,
        source: 'dashboard',
      });
      return dashboardContacts.profile(businessId, request.params.uuid);
    },
  );

  app.get(
    '/contacts/:uuid/deletion',
    {
      schema: {
        tags,
        security,
        summary: 'What deleting a contact removes with it (admins and owners)',
        description: 'How many conversations, messages, events and message attachments go with the contact.',
        params: UuidParams,
        response: responses({ 200: ContactDeletion }, 400, 401, 403, 404),
      },
      preHandler: admins,
    },
    async (request) => dashboardContacts.deletion(request.dashboard.businessId, request.params.uuid),
  );

  app.delete(
    '/contacts/:uuid',
    {
      schema: {
        tags,
        security,
        summary: 'Delete a contact with its conversations, messages and events (cannot be undone; admins and owners)',
        description: 'An agent gets 403 `forbidden`, as in Chatwoot; merging stays open to every role.',
        params: UuidParams,
        response: responses({ 200: DeleteResponse }, 400, 401, 403, 404),
      },
      preHandler: admins,
    },
    async (request) => contacts.remove(request.dashboard.businessId, request.params.uuid),
  );
};
