import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import {
  AcceptInvitationBody,
  ChangePasswordBody,
  SessionItem,
  SessionParams,
  SessionView,
  SignInBody,
  SwitchBusinessBody,
} from './dashboard-auth.schemas.ts';
import type { Client } from './sessions.service.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const open = { tags, security: [] };

const clientOf = (request: FastifyRequest): Client => ({
  ip: request.ip || null,
  userAgent: request.headers['user-agent'] ?? null,
});

const signInErrors =
  '401 `invalid_credentials`, the same for an unknown email and a wrong password; 429 `too_many_attempts` with ' +
  '`Retry-After` after repeated failures of the account or the client address.';

/** Sign-in, the session and its businesses, the user's sessions and password (ARCHITECTURE.md#dashboard-sessions). */
export const dashboardSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const sessions = app.services.dashboardSessions;

  app.post(
    '/session',
    {
      config: { dashboardSession: 'none' },
      schema: {
        ...open,
        summary: 'Sign in',
        description:
          'Tries the password on the users with this email in every business and opens a session acting for the ' +
          `most recently used; sets the \`session\` cookie (HttpOnly, SameSite=Lax, Path=/dashboard). ${signInErrors} ` +
          'Needs `Content-Type: application/json`, and an `Origin` of the service when the browser sends one.',
        body: SignInBody,
        response: responses({ 200: SessionView }, 400, 401, 403, 429),
      },
    },
    async (request, reply) => {
      const signedIn = await sessions.signIn(request.body, clientOf(request), request.cookies.session);
      return reply.startSession(signedIn.token, signedIn.expiresAt).send(signedIn.session);
    },
  );

  app.get(
    '/session',
    {
      schema: {
        tags,
        security,
        summary: 'The session: its user, business, businesses and CSRF token',
        response: responses({ 200: SessionView }, 401),
      },
    },
    async (request) => sessions.view(request.dashboard),
  );

  app.delete(
    '/session',
    {
      schema: {
        tags,
        security,
        summary: 'Sign out',
        response: responses({ 204: Type.Null() }, 401, 403),
      },
    },
    async (request, reply) => {
      await sessions.signOut(request.dashboard);
      return reply.endSession().status(204).send(null);
    },
  );

  app.put(
    '/session/business',
    {
      schema: {
        tags,
        security,
        summary: 'Act for another business',
        description: 'Only one the sign-in opened (listed in `businesses`); any other answers 404.',
        body: SwitchBusinessBody,
        response: responses({ 200: SessionView }, 400, 401, 403, 404),
      },
    },
    async (request) => sessions.switchBusiness(request.dashboard, request.body.business_id),
  );

  app.get(
    '/sessions',
    {
      schema: {
        tags,
        security,
        summary: "The signed-in user's live sessions, newest first (at most 100)",
        response: responses({ 200: Type.Object({ sessions: Type.Array(SessionItem) }) }, 401),
      },
    },
    async (request) => ({ sessions: await sessions.list(request.dashboard) }),
  );

  app.delete(
    '/sessions/:id',
    {
      schema: {
        tags,
        security,
        summary: "End one of the signed-in user's sessions",
        params: SessionParams,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      await sessions.revoke(request.dashboard, request.params.id);
      if (request.params.id === request.dashboard.sessionId) reply.endSession();
      return reply.status(204).send(null);
    },
  );

  app.put(
    '/password',
    {
      schema: {
        tags,
        security,
        summary: 'Change the password',
        description:
          'Sets it for every business the sign-in opened and ends the other sessions of those users. 403 ' +
          '`invalid_credentials` for a wrong current password; 429 `too_many_attempts` as at sign-in.',
        body: ChangePasswordBody,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 429),
      },
    },
    async (request, reply) => {
      await sessions.changePassword(request.dashboard, request.body, clientOf(request));
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/invitations/accept',
    {
      config: { dashboardSession: 'none' },
      schema: {
        ...open,
        summary: 'Accept an invitation: choose a password and sign in',
        description:
          'The token is the last part of the invitation link. 404 for an unknown token; 410 `invitation_expired` ' +
          'or `invitation_used` (a token works once).',
        body: AcceptInvitationBody,
        response: responses({ 200: SessionView }, 400, 403, 404, 410),
      },
    },
    async (request, reply) => {
      const signedIn = await app.services.invitations.accept(request.body, clientOf(request));
      return reply.startSession(signedIn.token, signedIn.expiresAt).send(signedIn.session);
    },
  );
};
