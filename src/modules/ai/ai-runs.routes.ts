import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { BusinessItemParams } from '../admin/admin.schemas.ts';
import { AiRunsPage, AiRunsQuery } from './ai-runs.schemas.ts';

/** What a conversation's runs show, for both surfaces. */
export const aiRunsDescription =
  "The runs of the conversation's AI agent, newest first: the inbound messages each answered, each model call (model, " +
  'tokens in and out, latency, error), each tool call, the reply sent and how the run ended. Paged by `before`.';

/** Operator routes of the AI agent's runs. */
export const aiRunsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/businesses/:bid/conversations/:id/ai-runs',
    {
      schema: {
        tags: ['operator'],
        security: [{ adminToken: [] }],
        summary: "A conversation's AI agent runs",
        description: `${aiRunsDescription} 404 for a conversation of another business.`,
        params: BusinessItemParams,
        querystring: AiRunsQuery,
        response: responses({ 200: AiRunsPage }, 400, 401, 404),
      },
    },
    async (request) => app.services.aiRuns.list(request.params.bid, request.params.id, request.query),
  );
};
