import { Type } from 'typebox';
import { Nullable, OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';

export const RUN_STATUSES = [
  'running',
  'replied',
  'skipped',
  'superseded',
  'handed_over',
  'resolved',
  'transferred',
] as const;

const ModelCall = Type.Object({
  model: Type.String(),
  tokens_in: Nullable(Type.Integer(), { description: "the prompt's tokens, as the API counted them" }),
  tokens_out: Nullable(Type.Integer(), { description: "the answer's tokens" }),
  latency_ms: Type.Integer({ description: 'from the call to its answer, retries included' }),
  error: Type.Optional(Type.String({ description: 'why the call failed after its retries' })),
});

const ToolCall = Type.Object({
  id: Type.String({ description: "the model's id of the call" }),
  round: Type.Integer({ description: 'the model call (1, 2, …) that asked for it' }),
  name: Type.String(),
  arguments: Type.Unknown({ description: 'as the model sent them (unparsable text is kept as a string)' }),
  result: Type.Optional(Type.Unknown({ description: 'what the tool answered the model' })),
  error: Type.Optional(
    Type.String({ description: 'why the call was refused (unknown or disabled tool, bad arguments) or failed' }),
  ),
  attempt: Type.Optional(Type.Integer({ description: "a transfer's attempt number in the run" })),
  latency_ms: Type.Integer(),
});

/** One run of a conversation's AI agent, as the operator API and the dashboard show it. */
export const AiRun = Type.Object({
  id: Uuid,
  conversation_id: Uuid,
  agent_id: Uuid,
  trigger_message_id: Uuid,
  input_message_ids: Type.Array(Uuid, { description: 'the inbound messages the run answered, oldest first' }),
  status: OneOf(RUN_STATUSES, {
    description:
      'running; replied; skipped (manual control, the agent changed, the conversation closed, no model); superseded (a newer message came: its run answers); handed_over (to a person: human_handoff, a failure, a transfer with no target available, too many tool rounds); resolved (resolve_conversation); transferred (a transfer accepted)',
  }),
  outcome: Nullable(Type.String(), { description: 'why the run ended as it did' }),
  model_calls: Type.Array(ModelCall),
  tool_calls: Type.Array(ToolCall),
  reply_text: Nullable(Type.String()),
  reply_message_id: Nullable(Uuid, {
    description: 'the message sent (the reply, or the fallback message of a hand-over)',
  }),
  bot_status: Nullable(OneOf(['bot_start', 'bot_end'] as const), {
    description: "bot_start on the agent's first reply in the conversation, bot_end on its hand-over message",
  }),
  attempts: Type.Integer({ description: 'tries of the run (a crash makes another)' }),
  error: Nullable(Type.String()),
  created_at: Timestamp,
  finished_at: Nullable(Timestamp),
});

export const AiRunsQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'runs to return; default 20, max 100' }),
    ),
    before: Type.Optional(Type.String({ format: 'uuid', description: 'the `next_before` of the previous page' })),
  },
  { additionalProperties: false },
);

export const AiRunsPage = Type.Object({
  runs: Type.Array(AiRun, { description: 'newest first' }),
  next_before: Nullable(Uuid, { description: 'pass as `before` for older runs; null when there are none' }),
});
