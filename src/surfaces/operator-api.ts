import type { FastifyPluginAsync } from 'fastify';
import { requireAdminToken } from '../http/admin-auth.ts';
import { adminRoutes } from '../modules/admin/admin.routes.ts';
import { requireBusiness } from '../modules/admin/business-scope.ts';
import { agentsAdminRoutes } from '../modules/agents/agents.admin-routes.ts';
import { aiRunsAdminRoutes } from '../modules/ai/ai-runs.routes.ts';
import { channelsAdminRoutes } from '../modules/channels/channels.routes.ts';
import { contactFieldsAdminRoutes } from '../modules/contact-fields/contact-fields.routes.ts';
import { contactsAdminRoutes } from '../modules/contacts/contacts.admin-routes.ts';
import { conversationOpsRoutes } from '../modules/conversations/conversation-ops.routes.ts';
import { importRoutes } from '../modules/import/import.routes.ts';
import { searchAdminRoutes } from '../modules/search/search.admin-routes.ts';
import { teamsAdminRoutes } from '../modules/teams/teams.routes.ts';
import { templatesAdminRoutes } from '../modules/templates/templates.routes.ts';
import { usersAdminRoutes } from '../modules/users/users.routes.ts';
import { webhooksAdminRoutes } from '../modules/webhooks/webhooks.routes.ts';
import { reportsAdminRoutes } from '../modules/reports/reports.routes.ts';

export const ADMIN_PREFIX = '/admin/v1';

/** Each module's operator routes under /businesses/:bid, in the order the OpenAPI document lists them. */
const businessModules = [
  usersAdminRoutes,
  teamsAdminRoutes,
  contactFieldsAdminRoutes,
  contactsAdminRoutes,
  templatesAdminRoutes,
  importRoutes,
  channelsAdminRoutes,
  agentsAdminRoutes,
  searchAdminRoutes,
  webhooksAdminRoutes,
  conversationOpsRoutes,
  aiRunsAdminRoutes,
  reportsAdminRoutes,
];

/**
 * The operator API under /admin/v1 (Bearer ADMIN_TOKEN): businesses and their keys, then every
 * module's provisioning of a business, where an unknown business answers 404 before any handler runs.
 */
export const operatorApi: FastifyPluginAsync<{ token: string }> = async (scope, { token }) => {
  requireAdminToken(scope, token);
  await scope.register(adminRoutes);
  await scope.register(async (business) => {
    requireBusiness(business);
    for (const routes of businessModules) await business.register(routes);
  });
};
