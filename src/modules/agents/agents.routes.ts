import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { responses } from '../../http/common.schemas.ts';
import { isJsonObject, withoutNulls } from '../../lib/json-merge.ts';
import { AgentParams, AgentResponse, UpdateAgentBody, UpdatedAgentResponse } from './agents.schemas.ts';

const tags = ['agents'];

/**
 * The contract: "null values are omitted before validation and save" (of the agent's fields). A
 * preValidation hook of every route that takes `{agent: {...}}` changes.
 */
export async function dropNullSettings(request: FastifyRequest): Promise<void> {
  const body = request.body as { agent?: unknown } | null;
  if (isJsonObject(body) && isJsonObject(body.agent)) body.agent = withoutNulls(body.agent);
}

/** What a partial update does, for every route that offers one. */
export const updateAgentDescription =
  'Body `{agent: {...}}` with the settings to change. name, type, system_prompt and model replace; prompt_config, tools, data, ' +
  'activation_rules, follow_up_settings and inactivity_run_settings are merged into the stored objects at every depth ' +
  '(an array or a plain value replaces). Null values are dropped before validation, as if not sent, so a null never ' +
  'erases a setting. A new tool needs `enabled`; its `instructions` default to "". Each JSON field holds at most 64 KiB. ' +
  'activation_rules, follow_up_settings and inactivity_run_settings are checked again as they would be stored (400). ' +
  'The answer carries id, name, type and each field sent, as it now is.';
const security = [{ apiKey: [] }];

/** Public agent configuration: read one agent, update it partially (PATCH, and PUT alike). */
export const agentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const agents = app.services.agents;

  app.get(
    '/agents/:agent_id',
    {
      schema: {
        tags,
        security,
        summary: "Read an agent's configuration",
        description: 'The whole configuration of an AI agent of the business. 404 for an agent of another business.',
        params: AgentParams,
        response: responses({ 200: AgentResponse }, 400, 401, 404),
      },
    },
    async (request) => ({
      agent: await agents.get(request.businessId, request.params.agent_id),
      business_id: request.businessId,
    }),
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/agents/:agent_id',
      schema: {
        tags,
        security,
        summary: `Update an agent partially${method === 'PUT' ? ' (as PATCH)' : ''}`,
        description: `${updateAgentDescription} PUT behaves as PATCH. 404 for an agent of another business.`,
        params: AgentParams,
        body: UpdateAgentBody,
        response: responses({ 200: UpdatedAgentResponse }, 400, 401, 404),
      },
      preValidation: dropNullSettings,
      handler: async (request) => ({
        agent: await agents.update(request.businessId, request.params.agent_id, request.body.agent),
        business_id: request.businessId,
      }),
    });
  }
};
