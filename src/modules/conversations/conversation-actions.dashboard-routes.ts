import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, responses, Timestamp, Uuid } from '../../http/common.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const params = Type.Object({ id: Uuid }, { additionalProperties: false });
const Conversation = Type.Object({
  id: Uuid,
  contact_id: Uuid,
  channel: Type.String(),
  closed_at: Nullable(Timestamp),
  manual_control: Type.Boolean(),
  manual_control_locked: Type.Boolean(),
  agent_id: Nullable(Uuid),
  assigned_user_id: Nullable(Uuid),
  team_id: Nullable(Uuid),
});
const answer = responses({ 200: Type.Object({ conversation: Conversation }) }, 400, 401, 403, 404);
const noBody = Type.Optional(Type.Object({}, { additionalProperties: false }));
const who =
  'Written with the signed-in user as actor (`actor_type` human, `user`), as GET /external/v2/events shows; ' +
  'nothing is written when nothing changes. Any role may do it.';

/**
 * What a team member does to a conversation from the dashboard: the operator API's operations
 * (ConversationOpsService), acted by the session's user.
 */
export const dashboardConversationActionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const ops = app.services.conversationOps;
  const wrap = async <T>(p: Promise<T>) => ({ conversation: await p });

  app.put(
    '/conversations/:id/control',
    {
      schema: {
        tags,
        security,
        summary: 'Take over from the AI, hand back, pin or unpin manual control',
        description:
          '`manual` true writes manual_control_activated, false manual_control_released; `locked` true pins it ' +
          '(manual_control_locked; implies manual), false unpins it (manual_control_unlocked). `manual: false` with ' +
          '`locked: true` answers 400. ' +
          who,
        params,
        body: Type.Object(
          { manual: Type.Boolean(), locked: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
        response: answer,
      },
    },
    async (request) =>
      wrap(
        ops.manualControl(request.dashboard.businessId, request.params.id, {
          user_id: request.dashboard.userId,
          active: request.body.manual,
          ...(request.body.locked !== undefined ? { locked: request.body.locked } : {}),
        }),
      ),
  );

  app.post(
    '/conversations/:id/resolve',
    {
      schema: {
        tags,
        security,
        summary: 'Mark the conversation resolved (conversation_resolved)',
        description: who,
        params,
        body: noBody,
        response: answer,
      },
    },
    async (request) =>
      wrap(ops.resolve(request.dashboard.businessId, request.params.id, { user_id: request.dashboard.userId })),
  );

  for (const [name, archived] of [
    ['archive', true],
    ['unarchive', false],
  ] as const) {
    app.post(
      `/conversations/:id/${name}`,
      {
        schema: {
          tags,
          security,
          summary: `${archived ? 'Archive (close)' : 'Unarchive (reopen)'} the conversation (conversation_${name}d, origin dashboard)`,
          description: who,
          params,
          body: noBody,
          response: answer,
        },
      },
      async (request) =>
        wrap(
          ops.archive(request.dashboard.businessId, request.params.id, { user_id: request.dashboard.userId }, archived),
        ),
    );
  }

  const assigneeId = (what: string) =>
    Type.Optional(Nullable(Type.String({ format: 'uuid', description: `${what}; null clears it` })));
  app.put(
    '/conversations/:id/assignee',
    {
      schema: {
        tags,
        security,
        summary: "Change the conversation's team, user or AI agent",
        description:
          'A team (the queue), a user (the person working it) and an AI agent are assigned separately. Each of ' +
          '`team_id`, `user_id` and `agent_id` that the body names is set, null clears it, and one it leaves out is ' +
          'kept; `{}` answers 400. An AI agent change writes agent_assigned, agent_switched or agent_removed; the ' +
          'contract has no exported event for a user or a team, whose change is announced to the live view only. ' +
          "Whether the AI answers is manual control's business (PUT .../control), not this. An id of no user, team " +
          'or agent of the business answers 404. ' +
          who,
        params,
        body: Type.Object(
          {
            user_id: assigneeId('the user working the conversation'),
            team_id: assigneeId('the team whose queue holds it'),
            agent_id: assigneeId('the AI agent of the conversation'),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: answer,
      },
    },
    async (request) =>
      wrap(
        ops.assign(request.dashboard.businessId, request.params.id, {
          user_id: request.dashboard.userId,
          assignee: request.body,
        }),
      ),
  );
};
