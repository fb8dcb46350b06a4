import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { BusinessParams } from '../admin/admin.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];

const CreateAgentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: "agent kind; default 'basic'" })),
    config: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 50, description: 'free-form configuration' })),
  },
  { additionalProperties: false },
);
const Agent = Type.Object({ id: Uuid, name: Type.String(), type: Type.String(), config: Type.Record(Type.String(), Type.Unknown()), created_at: Timestamp });

/** Operator routes for the AI agents of a business. */
export const agentsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // An unknown business answers 404 before the handler runs (as in admin.routes.ts).
  app.addHook('preHandler', async (request) => {
    await app.services.businesses.get((request.params as { bid: string }).bid);
  });

  app.post(
    '/businesses/:bid/agents',
    {
      schema: {
        tags, security, summary: 'Create an AI agent',
        description: 'A minimal agent record (name, type, free-form config); its id is the agent_id of POST /send-template.',
        params: BusinessParams, body: CreateAgentBody, response: responses({ 201: Type.Object({ agent: Agent }) }, 400, 401, 404),
      },
    },
    async (request, reply) => reply.status(201).send({ agent: await app.services.agents.create(request.params.bid, request.body) }),
  );
};
