import { Type, type Static, type TSchema } from 'typebox';
import { Nullable, OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { ActivationRulesInput } from './activation-rules.ts';

/** Bounds of an agent's configuration (the contract gives none). */
export const AGENT_LIMITS = {
  systemPrompt: 50_000,
  instructions: 10_000,
  tools: 50,
  /** Top-level keys of each other JSON field. */
  jsonKeys: 100,
  /** Each JSON field of an agent, serialised, after a partial update is merged in. */
  jsonFieldBytes: 64 * 1024,
} as const;

/** The JSON fields of an agent that a partial update merges into rather than replaces. */
export const AGENT_JSON_FIELDS = [
  'prompt_config',
  'tools',
  'data',
  'activation_rules',
  'follow_up_settings',
  'inactivity_run_settings',
] as const;
export type AgentJsonField = (typeof AGENT_JSON_FIELDS)[number];

// TypeBox turns a Record's key schema into a pattern; the key's length bounds go in propertyNames.
const JsonObject = (description: string) =>
  Type.Record(Type.String(), Type.Unknown(), {
    maxProperties: AGENT_LIMITS.jsonKeys,
    propertyNames: { minLength: 1, maxLength: 100 },
    description: `${description}; at most 100 keys of 1 to 100 characters`,
  });

const TOOL_NAME = '^[A-Za-z][A-Za-z0-9_.-]{0,63}$';
const ToolFields = {
  enabled: Type.Boolean(),
  instructions: Type.String({
    maxLength: AGENT_LIMITS.instructions,
    description: 'when to use the tool and how; default ""',
  }),
};
const Tool = Type.Object(ToolFields, { additionalProperties: false });
const Tools = <T extends TSchema>(tool: T, description: string) =>
  Type.Record(Type.String({ pattern: TOOL_NAME }), tool, {
    maxProperties: AGENT_LIMITS.tools,
    additionalProperties: false,
    description,
  });

/** Settings of the prompt: the keys the agent's run reads are typed; any other (tone, language, ...) is free. */
const PromptConfigObject = Type.Object(
  {
    fallback_message: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description:
          'sent to the customer when the agent cannot answer (the model failed after its retries) as it hands the conversation to a person',
      }),
    ),
    max_history_tokens: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 100_000,
        description: 'most tokens of recent messages the prompt carries, the oldest dropped first; default 3000',
      }),
    ),
    max_reply_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 16_384, description: "the reply's bound" })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  },
  {
    additionalProperties: true,
    maxProperties: AGENT_LIMITS.jsonKeys,
    propertyNames: { minLength: 1, maxLength: 100 },
    description:
      'settings of the prompt: fallback_message, max_history_tokens, max_reply_tokens, temperature, and free keys (tone, language, …) the prompt lists; at most 100 keys',
  },
);
const PromptConfig = Type.Unsafe<Static<typeof PromptConfigObject> & Record<string, unknown>>(PromptConfigObject);

const settings = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  type: Type.String({ minLength: 1, maxLength: 50, description: "the agent's kind, e.g. 'basic'" }),
  system_prompt: Type.String({
    maxLength: AGENT_LIMITS.systemPrompt,
    description: 'the instructions the agent follows',
  }),
  model: Type.String({ minLength: 1, maxLength: 100, description: 'the language model the agent answers with' }),
  prompt_config: PromptConfig,
  data: JsonObject('free-form data the agent draws on'),
  activation_rules: ActivationRulesInput,
  follow_up_settings: JsonObject('follow-up messages after a silence'),
  inactivity_run_settings: JsonObject('what the agent does when a conversation goes quiet'),
};

/** The body of POST /admin/v1/businesses/:bid/agents. */
export const CreateAgentBody = Type.Object(
  {
    name: settings.name,
    type: Type.Optional({ ...settings.type, description: "the agent's kind; default 'basic'" }),
    system_prompt: Type.Optional(settings.system_prompt),
    model: Type.Optional(settings.model),
    prompt_config: Type.Optional(settings.prompt_config),
    tools: Type.Optional(
      Tools(
        Type.Object(
          { enabled: ToolFields.enabled, instructions: Type.Optional(ToolFields.instructions) },
          { additionalProperties: false },
        ),
        'tools keyed by name',
      ),
    ),
    data: Type.Optional(settings.data),
    activation_rules: Type.Optional(settings.activation_rules),
    follow_up_settings: Type.Optional(settings.follow_up_settings),
    inactivity_run_settings: Type.Optional(settings.inactivity_run_settings),
  },
  { additionalProperties: false },
);
export type CreateAgentInput = Static<typeof CreateAgentBody>;

/** What a partial update may change: every setting, all optional; the JSON fields merge. */
export const AgentChanges = Type.Object(
  {
    name: Type.Optional(settings.name),
    type: Type.Optional(settings.type),
    system_prompt: Type.Optional(settings.system_prompt),
    model: Type.Optional(settings.model),
    prompt_config: Type.Optional(settings.prompt_config),
    tools: Type.Optional(
      Tools(
        Type.Object(
          { enabled: Type.Optional(ToolFields.enabled), instructions: Type.Optional(ToolFields.instructions) },
          { additionalProperties: false },
        ),
        'tools keyed by name, each merged into the tool of that name; a new tool needs `enabled`',
      ),
    ),
    data: Type.Optional(settings.data),
    activation_rules: Type.Optional(settings.activation_rules),
    follow_up_settings: Type.Optional(settings.follow_up_settings),
    inactivity_run_settings: Type.Optional(settings.inactivity_run_settings),
  },
  {
    additionalProperties: false,
    description: 'the settings to change; null values are dropped before validation, as if not sent',
  },
);
export type AgentChangesInput = Static<typeof AgentChanges>;

export const UpdateAgentBody = Type.Object({ agent: AgentChanges }, { additionalProperties: false });

export const AgentParams = Type.Object({ agent_id: Uuid }, { additionalProperties: false });

/** An agent's whole configuration, as GET /agents/:agent_id and the operator API answer it. */
export const Agent = Type.Object({
  id: Uuid,
  name: Type.String(),
  type: Type.String(),
  system_prompt: Type.String(),
  model: Nullable(Type.String(), { description: "null: the service's default model" }),
  prompt_config: Type.Record(Type.String(), Type.Unknown()),
  tools: Type.Record(Type.String(), Tool),
  data: Type.Record(Type.String(), Type.Unknown()),
  activation_rules: Type.Record(Type.String(), Type.Unknown()),
  follow_up_settings: Type.Record(Type.String(), Type.Unknown()),
  inactivity_run_settings: Type.Record(Type.String(), Type.Unknown()),
  status: OneOf(['active', 'inactive'] as const, { description: 'whether the agent answers messages now' }),
  inactive_reason: Nullable(Type.String(), {
    description:
      'why it does not (no model configured: LLM_URL unset; activation_rules.enabled false); null when active',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type AgentRecord = Static<typeof Agent>;

export const AgentResponse = Type.Object({ agent: Agent, business_id: Uuid });

/** An agent in a list: who it is, without its configuration (GET /agents/:agent_id has it). */
export const AgentSummary = Type.Pick(Agent, [
  'id',
  'name',
  'type',
  'model',
  'status',
  'inactive_reason',
  'created_at',
  'updated_at',
]);

/** The answer of a partial update: id, name and type, and the fields the update sent, as they now are. */
export const UpdatedAgentResponse = Type.Object({
  agent: Type.Object({ ...Type.Partial(Agent).properties, id: Uuid, name: Type.String(), type: Type.String() }),
  business_id: Uuid,
});
