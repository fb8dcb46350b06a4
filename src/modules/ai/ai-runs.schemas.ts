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
  'analyzed',
  'failed',
] as const;
export const RUN_KINDS = ['reply', 'follow_up', 'sentiment'] as const;

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
  kind: OneOf(RUN_KINDS, {
    description:
      "reply (answers the customer's messages), follow_up (written after the customer's silence), sentiment (the conversation's sentiment, after its resolution or a quiet period)",
  }),
  trigger_message_id: Type.String({
    format: 'uuid',
    description:
      "the message the run is for: the newest inbound message a reply answers, the agent's message a follow-up follows, the newest message a sentiment covers",
  }),
  input_message_ids: Type.Array(Uuid, {
    description:
      'the inbound messages a reply answered, oldest first; for a follow-up, the inbound message the silence follows',
  }),
  status: OneOf(RUN_STATUSES, {
    description:
      'running; replied (a reply or a follow-up sent); skipped (manual control, the agent changed, the conversation closed, no model, the daily token budget used up); superseded (a newer message came: its run answers); handed_over (to a person: human_handoff, a failure, a transfer with no target available, too many tool rounds, the daily token budget used up); resolved (resolve_conversation); transferred (a transfer accepted); analyzed (a sentiment written); failed (the model gave no usable answer)',
  }),
  outcome: Nullable(Type.String(), {
    description:
      'why the run ended as it did (budget_exhausted: the business used its daily token budget; a sentiment: its value)',
  }),
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
