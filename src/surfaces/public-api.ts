import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { requireApiKey } from '../http/api-key-auth.ts';
import { registerIdempotency } from '../http/idempotency.ts';
import { registerRateLimits } from '../http/rate-limit.ts';
import { agentsRoutes } from '../modules/agents/agents.routes.ts';
import { contactMergeRoutes } from '../modules/contact-merge/contact-merge.routes.ts';
import { contactsRoutes } from '../modules/contacts/contacts.routes.ts';
import { conversationsRoutes } from '../modules/conversations/conversations.routes.ts';
import { exportsRoutes } from '../modules/exports/exports.routes.ts';
import { mediaRoutes } from '../modules/media/media.routes.ts';
import { messagesRoutes } from '../modules/messages/messages.routes.ts';
import { searchRoutes } from '../modules/search/search.routes.ts';
import { sendingRoutes } from '../modules/sending/sending.routes.ts';
import { timelineRoutes } from '../modules/timeline/timeline.routes.ts';

export const PUBLIC_PREFIX = '/external/v2';

/** The public API's modules, in the order the OpenAPI document lists them. */
const modules = [
  exportsRoutes,
  timelineRoutes,
  mediaRoutes,
  contactsRoutes,
  conversationsRoutes,
  messagesRoutes,
  contactMergeRoutes,
  sendingRoutes,
  agentsRoutes,
  searchRoutes,
];

/** The Business Messaging and Contacts API under /external/v2: API key, idempotency, rate limits. */
export const publicApi: FastifyPluginAsync<{ config: Config; db: Db }> = async (scope, { config, db }) => {
  requireApiKey(scope, (key) => scope.services.apiKeys.resolve(key));
  registerIdempotency(scope, scope.services.idempotency);
  await registerRateLimits(scope, config, db);
  for (const routes of modules) await scope.register(routes);
};
