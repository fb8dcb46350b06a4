import cookie from '@fastify/cookie';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import {
  CSRF_HEADER,
  csrfMatches,
  isJsonBody,
  sameOrigin,
  SESSION_COOKIE,
  sessionCookieOptions,
} from '../http/dashboard-session.ts';
import { AppError } from '../http/errors.ts';
import { dashboardSessionRoutes } from '../modules/dashboard-auth/dashboard-auth.routes.ts';
import { dashboardInvitationRoutes } from '../modules/dashboard-auth/invitations.dashboard-routes.ts';
import { dashboardInboxRoutes } from '../modules/conversations/inbox.dashboard-routes.ts';
import { dashboardThreadRoutes } from '../modules/messages/thread.dashboard-routes.ts';
import type { SessionPrincipal } from '../modules/dashboard-auth/sessions.service.ts';
import { dashboardContactsRoutes } from '../modules/contacts/contacts.dashboard-routes.ts';
import { liveRoutes } from '../modules/live/live.routes.ts';
import { dashboardAiRunsRoutes } from '../modules/ai/ai-runs.dashboard-routes.ts';
import { dashboardAgentsRoutes } from '../modules/agents/agents.dashboard-routes.ts';
import { dashboardChannelsRoutes } from '../modules/channels/channels.dashboard-routes.ts';
import { dashboardTeamsRoutes } from '../modules/teams/teams.dashboard-routes.ts';
import { dashboardTemplatesRoutes } from '../modules/templates/templates.dashboard-routes.ts';
import { dashboardTeamRoutes } from '../modules/users/users.dashboard-routes.ts';
import { dashboardConversationActionRoutes } from '../modules/conversations/conversation-actions.dashboard-routes.ts';
import { dashboardTypingRoutes } from '../modules/live/typing.dashboard-routes.ts';
import { dashboardReplyRoutes } from '../modules/sending/replies.dashboard-routes.ts';
import { registerIdempotency } from '../http/idempotency.ts';
import { dashboardApiKeyRoutes } from '../modules/api-keys/api-keys.dashboard-routes.ts';
import { dashboardWebhookRoutes } from '../modules/webhooks/webhooks.dashboard-routes.ts';
import { dashboardReportsRoutes } from '../modules/reports/reports.dashboard-routes.ts';

export const DASHBOARD_API_PREFIX = '/dashboard/api';

/**
 * Who a dashboard request acts as, `{ sessionId, userId, businessId, role }`: set by the session
 * hook on every route that needs a session. Its business is the only one the request may reach.
 */
export type DashboardPrincipal = SessionPrincipal;

declare module 'fastify' {
  interface FastifyRequest {
    dashboard: DashboardPrincipal;
  }
  interface FastifyReply {
    /** Sets the session cookie of a new session. */
    startSession(token: string, expiresAt: number): FastifyReply;
    /** Clears the session cookie. */
    endSession(): FastifyReply;
  }
  interface FastifyContextConfig {
    /** `none`: the route answers without a session (sign-in, accepting an invitation). */
    dashboardSession?: 'none';
  }
}

/**
 * Each module's dashboard routes, in the order the OpenAPI document lists them: a module adds its
 * plugin here. Its routes see `request.dashboard` and may call `requireRole`.
 */
export const dashboardModules: FastifyPluginAsync[] = [
  dashboardSessionRoutes,
  dashboardTeamRoutes,
  dashboardInvitationRoutes,
  dashboardInboxRoutes,
  dashboardThreadRoutes,
  dashboardReplyRoutes,
  dashboardConversationActionRoutes,
  dashboardTypingRoutes,
  dashboardContactsRoutes,
  dashboardApiKeyRoutes,
  dashboardWebhookRoutes,
  liveRoutes,
  dashboardTeamsRoutes,
  dashboardChannelsRoutes,
  dashboardTemplatesRoutes,
  dashboardAgentsRoutes,
  dashboardAiRunsRoutes,
  dashboardReportsRoutes,
];

/**
 * `{ preHandler: requireRole('admin') }` on a route of admins and owners. Route modules import it from
 * src/http/dashboard-session.ts: importing this file, which imports them, would make a cycle.
 */
export { requireRole } from '../http/dashboard-session.ts';

const csrfFailed = (message: string) => new AppError(403, 'csrf_failed', message);

/**
 * The dashboard's session API under /dashboard/api (docs/ARCHITECTURE.md#dashboard-sessions): the
 * session cookie, resolved on every request; the CSRF token on every write; JSON and a same-origin
 * `Origin` where there is no session yet.
 */
export const dashboardApi: FastifyPluginAsync<{ publicUrl: string }> = async (scope, { publicUrl }) => {
  const cookieOptions = sessionCookieOptions(publicUrl);
  const publicOrigin = new URL(publicUrl).origin;
  await scope.register(cookie);
  scope.decorateRequest('dashboard', null as unknown as DashboardPrincipal);
  scope.decorateReply('startSession', function (this: FastifyReply, token: string, expiresAt: number) {
    return this.setCookie(SESSION_COOKIE, token, { ...cookieOptions, expires: new Date(expiresAt) });
  });
  scope.decorateReply('endSession', function (this: FastifyReply) {
    return this.clearCookie(SESSION_COOKIE, cookieOptions);
  });

  scope.addHook('onRequest', async (request, reply) => {
    const write = request.method !== 'GET' && request.method !== 'HEAD';
    if (write && !sameOrigin(request, publicOrigin)) throw csrfFailed('the request comes from another origin');
    if (request.routeOptions.config.dashboardSession === 'none') {
      if (write && !isJsonBody(request))
        throw new AppError(415, 'unsupported_media_type', 'send the body as application/json');
      return;
    }
    const token = request.cookies[SESSION_COOKIE];
    const resolved = token ? await scope.services.dashboardSessions.resolve(token) : undefined;
    if (!resolved) {
      if (token !== undefined) reply.endSession();
      throw new AppError(401, 'unauthorized', 'sign in first: no live session');
    }
    if (write && !csrfMatches(request, resolved.csrfToken))
      throw csrfFailed(`missing or wrong ${CSRF_HEADER} header: send the csrf_token of the session`);
    request.dashboard = resolved.principal;
  });

  // Keys of the session's business, as the public API's are of the key's (docs/ARCHITECTURE.md#idempotency).
  registerIdempotency(scope, scope.services.idempotency, (request) => request.dashboard.businessId);
  for (const routes of dashboardModules) await scope.register(routes);
};
