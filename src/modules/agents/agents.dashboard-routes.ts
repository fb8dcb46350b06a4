import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { dropNullSettings, updateAgentDescription } from './agents.routes.ts';
import { Agent, AgentSummary, UpdateAgentBody, UpdatedAgentResponse } from './agents.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const Params = Type.Object({ id: Uuid }, { additionalProperties: false });

/**
 * The AI agents of the session's business, configured by admins and owners as the public API does;
 * their list (no configuration) is everyone's, for assigning conversations.
 */
export const dashboardAgentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { agents } = app.services;
  const preHandler = requireRole('admin');

  app.get(
    '/agents',
    {
      schema: {
        tags,
        security,
        summary: "The business's AI agents, oldest first (at most 500)",
        description: 'Names and models only, for any role: the inbox assigns conversations to them.',
        response: responses({ 200: Type.Object({ agents: Type.Array(AgentSummary) }) }, 401),
      },
    },
    async (request) => ({ agents: await agents.list(request.dashboard.businessId, 500) }),
  );

  app.get(
    '/agents/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: "An AI agent's whole configuration (admins and owners)",
        params: Params,
        response: responses({ 200: Type.Object({ agent: Agent }) }, 400, 401, 403, 404),
      },
    },
    async (request) => ({ agent: await agents.get(request.dashboard.businessId, request.params.id) }),
  );

  app.patch(
    '/agents/:id',
    {
      preHandler,
      preValidation: dropNullSettings,
      schema: {
        tags,
        security,
        summary: "Change an AI agent's configuration (admins and owners)",
        description: `As PATCH /external/v2/agents/:agent_id. ${updateAgentDescription}`,
        params: Params,
        body: UpdateAgentBody,
        response: responses({ 200: UpdatedAgentResponse }, 400, 401, 403, 404),
      },
    },
    async (request) => ({
      agent: await agents.update(request.dashboard.businessId, request.params.id, request.body.agent),
      business_id: request.dashboard.businessId,
    }),
  );
};
