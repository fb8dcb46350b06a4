import { Type, type Static, type TSchema } from 'typebox';
import { Nullable, OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { ActivationRulesInput } from './activation-rules.ts';
import { FollowUpSettingsInput, InactivityRunSettingsInput } from './timer-settings.ts';

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
/** Targets a transfer may name, and custom fields an update_contact may write, at most. */
export const TOOL_LIMITS = { transferTargets: 20, contactCustomFields: 50 } as const;

/** A person, a team or a phone number the agent's `transfer` tool may hand the conversation to. */
const TransferTarget = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
      description: 'what the model names the target by (unique among the targets)',
    }),
    description: Type.Optional(Type.String({ maxLength: 500, description: 'when to choose it, for the model' })),
    user_id: Type.Optional({ ...Uuid, description: 'a user of the business' }),
    team_id: Type.Optional({ ...Uuid, description: 'a team of the business' }),
    phone_number: Type.Optional(
      Type.String({ minLength: 3, maxLength: 32, description: 'a phone number with country code' }),
    ),
  },
  { additionalProperties: false, description: 'a target: `name` and exactly one of user_id, team_id, phone_number' },
);

const TOOLS_DESCRIPTION =
  'Tools keyed by name, at most 50. The AI agent offers the model those of search_collection (with EMBEDDINGS_URL), ' +
  'human_handoff, transfer, resolve_conversation and update_contact that are enabled, each described by its ' +
  '`instructions`; they act only on the conversation being answered, its contact and business. `transfer.targets` ' +
  'lists who a transfer may go to (users and teams of the business, phone numbers); `update_contact.fields` and ' +
  '`.custom_fields` what it may write. Other names are kept and not offered. Unknown fields are refused.';

/**
 * The tools an agent may have, each `{enabled, instructions}`: the run offers the enabled ones of
 * AI_TOOL_NAMES to the model, with their instructions as the description. `transfer` and
 * `update_contact` carry what they may act on; any other name keeps only the two common fields.
 */
function toolsSchema(enabledRequired: boolean, description: string) {
  const common = {
    enabled: enabledRequired ? Type.Boolean() : Type.Optional(Type.Boolean()),
    instructions: Type.Optional(
      Type.String({ maxLength: AGENT_LIMITS.instructions, description: 'when to use the tool and how; default ""' }),
    ),
  };
  const tool = (extra: Record<string, TSchema>, toolDescription: string) =>
    Type.Optional(Type.Object({ ...common, ...extra }, { additionalProperties: false, description: toolDescription }));
  return Type.Object(
    {
      search_collection: tool({}, "searches the business's search collections by meaning (needs EMBEDDINGS_URL)"),
      human_handoff: tool({}, 'hands the conversation to a person, with a message to the customer'),
      transfer: tool(
        {
          targets: Type.Optional(
            Type.Array(TransferTarget, {
              maxItems: TOOL_LIMITS.transferTargets,
              description: 'who the conversation may be transferred to; the model names one by its `name`',
            }),
          ),
        },
        'transfers the conversation to one of its targets',
      ),
      resolve_conversation: tool({}, 'marks the conversation resolved'),
      update_contact: tool(
        {
          fields: Type.Optional(
            Type.Array(OneOf(['name', 'tags'] as const), {
              maxItems: 2,
              uniqueItems: true,
              description: "the contact's fields the tool may write",
            }),
          ),
          custom_fields: Type.Optional(
            Type.Array(Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$' }), {
              maxItems: TOOL_LIMITS.contactCustomFields,
              uniqueItems: true,
              description: 'the custom fields (keys) the tool may write',
            }),
          ),
        },
        "writes the contact's allowed fields",
      ),
    },
    {
      additionalProperties: Type.Object(common, { additionalProperties: false }),
      propertyNames: { pattern: TOOL_NAME },
      maxProperties: AGENT_LIMITS.tools,
      description,
    },
  );
}

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
  follow_up_settings: FollowUpSettingsInput,
  inactivity_run_settings: InactivityRunSettingsInput,
};

/** The body of POST /admin/v1/businesses/:bid/agents. */
export const CreateAgentBody = Type.Object(
  {
    name: settings.name,
    type: Type.Optional({ ...settings.type, description: "the agent's kind; default 'basic'" }),
    system_prompt: Type.Optional(settings.system_prompt),
    model: Type.Optional(settings.model),
    prompt_config: Type.Optional(settings.prompt_config),
    tools: Type.Optional(toolsSchema(true, TOOLS_DESCRIPTION)),
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
      toolsSchema(
        false,
        `${TOOLS_DESCRIPTION} Each is merged into the tool of that name; a new tool needs \`enabled\`.`,
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
  tools: toolsSchema(true, TOOLS_DESCRIPTION),
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
