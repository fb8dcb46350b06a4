import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { Agent, AgentSummary, CreateAgentBody } from './agents.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

/** Operator routes for the AI agents of a business. */
export const agentsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/businesses/:bid/agents',
    {
      schema: {
        tags,
        security,
        summary: 'Create an AI agent',
        description:
          'An agent with its configuration (all but name optional: type defaults to basic, system_prompt to "", model to null, the ' +
          'JSON fields to {}; each tool needs `enabled`). Its id is the agent_id of POST /send-template and of GET/PATCH /agents/:agent_id. ' +
          'follow_up_settings (follow-ups after a silence) and inactivity_run_settings (a quiet conversation resolved or archived, ' +
          "manual control's return) drive the agent's timers; each is off until `enabled` (manual_control_release_minutes: until set).",
        params: BusinessParams,
        body: CreateAgentBody,
        response: responses({ 201: Type.Object({ agent: Agent }) }, 400, 401, 404),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ agent: await app.services.agents.create(request.params.bid, request.body) }),
  );

  app.get(
    '/businesses/:bid/agents',
    {
      schema: {
        tags,
        security,
        summary: 'List the AI agents of the business, oldest first',
        description: 'Without their configuration, which GET /external/v2/agents/:agent_id answers.',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ agents: Type.Array(AgentSummary) }) }, 400, 401, 404),
      },
    },
    async (request) => ({ agents: await app.services.agents.list(request.params.bid, request.query.limit ?? 100) }),
  );
};
