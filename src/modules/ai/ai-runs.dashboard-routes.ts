import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { aiRunsDescription } from './ai-runs.routes.ts';
import { AiRunsPage, AiRunsQuery } from './ai-runs.schemas.ts';

const Params = Type.Object({ id: Uuid }, { additionalProperties: false });

/** The AI agent's runs of a conversation of the session's business (any role, as the inbox). */
export const dashboardAiRunsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/conversations/:id/ai-runs',
    {
      schema: {
        tags: ['dashboard'],
        security: [{ sessionCookie: [] }],
        summary: "A conversation's AI agent runs",
        description: `${aiRunsDescription} 404 for a conversation of another business.`,
        params: Params,
        querystring: AiRunsQuery,
        response: responses({ 200: AiRunsPage }, 400, 401, 404),
      },
    },
    async (request) => app.services.aiRuns.list(request.dashboard.businessId, request.params.id, request.query),
  );
};
