import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, responses, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { BusinessItemParams } from '../admin/admin.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];
const actor = {
  user_id: Type.Optional(
    Type.String({ format: 'uuid', description: 'team member acting (actor human); omitted = system' }),
  ),
};
const reason = Type.Optional(Type.String({ minLength: 1, maxLength: 500 }));
const Conversation = Type.Object({
  id: Uuid,
  contact_id: Uuid,
  channel: Type.String(),
  closed_at: Nullable(Timestamp),
  manual_control: Type.Boolean(),
  manual_control_locked: Type.Boolean(),
  agent_id: Nullable(Uuid),
});
const answer = responses({ 200: Type.Object({ conversation: Conversation }) }, 400, 401, 404);
const path = '/businesses/:bid/conversations/:id';

/** Conversation operations of the dashboard, each writing its exported event (see GET /events). */
export const conversationOpsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const ops = app.services.conversationOps;
  const wrap = async <T>(p: Promise<T>) => ({ conversation: await p });

  app.post(
    `${path}/resolve`,
    {
      schema: {
        tags,
        security,
        summary: 'Mark a conversation resolved (conversation_resolved)',
        params: BusinessItemParams,
        body: Type.Object({ ...actor, reason }, { additionalProperties: false }),
        response: answer,
      },
    },
    async (request) => wrap(ops.resolve(request.params.bid, request.params.id, request.body)),
  );

  app.post(
    `${path}/manual-control`,
    {
      schema: {
        tags,
        security,
        params: BusinessItemParams,
        response: answer,
        summary: 'Take over from the AI, hand back, pin or unpin manual control',
        description:
          'active true/false writes manual_control_activated/released; locked true/false writes manual_control_locked/unlocked. Pinning implies manual control; releasing removes the pin.',
        body: Type.Object(
          { ...actor, active: Type.Optional(Type.Boolean()), locked: Type.Optional(Type.Boolean()), reason },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => wrap(ops.manualControl(request.params.bid, request.params.id, request.body)),
  );

  for (const [name, archived] of [
    ['archive', true],
    ['unarchive', false],
  ] as const) {
    app.post(
      `${path}/${name}`,
      {
        schema: {
          tags,
          security,
          summary: `${archived ? 'Archive' : 'Unarchive'} one conversation (conversation_${name}d)`,
          params: BusinessItemParams,
          body: Type.Object(actor, { additionalProperties: false }),
          response: answer,
        },
      },
      async (request) => wrap(ops.archive(request.params.bid, request.params.id, request.body, archived)),
    );
  }

  app.put(
    `${path}/agent`,
    {
      schema: {
        tags,
        security,
        params: BusinessItemParams,
        response: answer,
        summary: "Set or remove the conversation's AI agent (agent_assigned / agent_switched / agent_removed)",
        body: Type.Object(
          { ...actor, agent_id: Nullable(Type.String({ format: 'uuid' })) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => wrap(ops.setAgent(request.params.bid, request.params.id, request.body)),
  );
};
