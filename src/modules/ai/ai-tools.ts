import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { CustomFields } from '../contacts/contacts.schemas.ts';
import type { ChatTool, ToolCallRequest } from './llm-client.ts';

/** The tools an agent's run offers the model, named so to it, each when enabled in the agent's `tools`. */
export const AI_TOOL_NAMES = [
  'search_collection',
  'human_handoff',
  'transfer',
  'resolve_conversation',
  'update_contact',
] as const;
export type AiToolName = (typeof AI_TOOL_NAMES)[number];

/** A transfer target as the agent's configuration lists it (agents.schemas.ts). */
export interface TransferTarget {
  name: string;
  description?: string;
  user_id?: string;
  team_id?: string;
  phone_number?: string;
}

/** One tool of the agent's configuration. */
export interface ToolConfig {
  enabled?: boolean;
  instructions?: string;
  targets?: TransferTarget[];
  fields?: string[];
  custom_fields?: string[];
}

const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'why, in a sentence' });
const CustomerMessage = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: "what the customer is told, in the conversation's language",
});

/**
 * The arguments of each tool. None names a conversation, a contact or a business: a tool acts on
 * the run's own, and an argument the schema does not know is refused.
 */
const ARGUMENTS = {
  search_collection: Type.Object(
    {
      query: Type.String({ minLength: 1, maxLength: 1000, description: 'what to look for, in plain words' }),
      collection: Type.Optional(
        Type.String({ minLength: 1, maxLength: 200, description: 'a collection name or id; default: all' }),
      ),
    },
    { additionalProperties: false },
  ),
  human_handoff: Type.Object(
    { reason: Reason, message: Type.Optional(CustomerMessage) },
    { additionalProperties: false },
  ),
  transfer: Type.Object(
    {
      target: Type.String({ minLength: 1, maxLength: 64, description: 'the name of one of the targets' }),
      reason: Reason,
      message: Type.Optional(CustomerMessage),
    },
    { additionalProperties: false },
  ),
  resolve_conversation: Type.Object({ reason: Reason }, { additionalProperties: false }),
  update_contact: Type.Object(
    {
      fields: Type.Object(
        {
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: 'full name' })),
          tags: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
              maxItems: 50,
              description: 'the whole tag list',
            }),
          ),
          custom_fields: Type.Optional(CustomFields),
        },
        { additionalProperties: false, minProperties: 1 },
      ),
    },
    { additionalProperties: false },
  ),
} satisfies Record<AiToolName, TSchema>;

export type ToolArguments = { [K in AiToolName]: Static<(typeof ARGUMENTS)[K]> };

/** What each tool does, before the agent's own instructions for it. */
const PURPOSE: Record<AiToolName, string> = {
  search_collection: "Searches the business's knowledge (its search collections) by meaning; answer from the results.",
  human_handoff: 'Hands the conversation to a person of the team; the customer is told a person will follow.',
  transfer: 'Transfers the conversation to one of the listed targets.',
  resolve_conversation: 'Marks the conversation resolved once the customer has what they needed.',
  update_contact: "Writes the customer's details that they gave in the conversation.",
};

const isTool = (name: string): name is AiToolName => (AI_TOOL_NAMES as readonly string[]).includes(name);

/** The agent's enabled tools of AI_TOOL_NAMES (search only where items can be searched). */
export function enabledTools(tools: Record<string, ToolConfig>, options: { searchable: boolean }): AiToolName[] {
  return AI_TOOL_NAMES.filter(
    (name) =>
      Object.hasOwn(tools, name) &&
      tools[name].enabled === true &&
      (name !== 'search_collection' || options.searchable),
  );
}

/** A JSON schema of an object, as far as the narrowing below reads it. */
interface ObjectSchema {
  properties: Record<string, { enum?: string[]; properties?: Record<string, unknown> } & Record<string, unknown>>;
  [key: string]: unknown;
}

/** A schema as plain JSON (TypeBox's own markers dropped), to narrow for the model. */
const plain = (schema: TSchema) => JSON.parse(JSON.stringify(schema)) as ObjectSchema;

/**
 * The tools offered to the model: each enabled tool with its purpose and the agent's instructions as
 * its description, and its arguments' schema narrowed by the configuration (a transfer's target
 * names, the contact fields update_contact may write).
 */
export function offeredTools(tools: Record<string, ToolConfig>, enabled: AiToolName[]): ChatTool[] {
  return enabled.map((name) => {
    const config = tools[name];
    const parameters = plain(ARGUMENTS[name]);
    let extra = '';
    if (name === 'transfer') {
      const targets = config.targets ?? [];
      if (targets.length > 0) parameters.properties.target.enum = targets.map((t) => t.name);
      extra = targets.map((t) => `\n- ${t.name}${t.description ? `: ${t.description}` : ''}`).join('');
      extra = extra ? `\nTargets:${extra}` : '\nNo target is listed.';
    }
    if (name === 'update_contact') {
      const fields = parameters.properties.fields;
      const allowed = new Set(config.fields ?? []);
      const properties = fields.properties ?? {};
      for (const field of ['name', 'tags']) if (!allowed.has(field)) delete properties[field];
      const custom = config.custom_fields ?? [];
      if (custom.length > 0)
        properties.custom_fields = {
          type: 'object',
          additionalProperties: false,
          properties: Object.fromEntries(custom.map((key) => [key, { type: ['string', 'number', 'boolean'] }])),
        };
      else delete properties.custom_fields;
    }
    const instructions = config.instructions?.trim();
    return {
      type: 'function',
      function: {
        name,
        description: `${PURPOSE[name]}${extra}${instructions ? `\n${instructions}` : ''}`,
        parameters,
      },
    };
  });
}

/** A tool call checked against the agent's tools: the tool and its arguments, or why it is refused. */
export type CheckedCall =
  | { ok: true; name: AiToolName; args: ToolArguments[AiToolName]; raw: unknown }
  | { ok: false; error: string; raw: unknown };

/** The first reason a value breaks its schema, as `path: message`. */
function firstError(schema: TSchema, value: unknown): string {
  const errors = Value.Errors(schema, value);
  const error = errors.find((e) => e.keyword === 'additionalProperties') ?? errors[0];
  if (!error) return 'invalid arguments';
  const unknown = (error.params as { additionalProperties?: string[] }).additionalProperties;
  const at = error.instancePath || '/';
  return unknown ? `${at}: unknown argument ${unknown.join(', ')}` : `${at}: ${error.message}`;
}

/**
 * Checks a call the model asked for: a tool of AI_TOOL_NAMES, enabled for the agent, with arguments
 * of its schema, and for update_contact only the fields its configuration allows.
 */
export function checkToolCall(
  call: ToolCallRequest,
  tools: Record<string, ToolConfig>,
  enabled: AiToolName[],
): CheckedCall {
  let raw: unknown;
  try {
    raw = JSON.parse(call.arguments || '{}');
  } catch {
    return { ok: false, error: 'the arguments are not JSON', raw: call.arguments.slice(0, 2000) };
  }
  if (!isTool(call.name)) return { ok: false, error: `no tool named ${call.name.slice(0, 64)}`, raw };
  if (!enabled.includes(call.name)) return { ok: false, error: `the tool ${call.name} is not enabled`, raw };
  const schema = ARGUMENTS[call.name];
  if (!Value.Check(schema, raw)) return { ok: false, error: firstError(schema, raw), raw };
  if (call.name === 'update_contact') {
    const config = tools.update_contact;
    const { custom_fields: custom, ...fields } = (raw as ToolArguments['update_contact']).fields;
    const allowed = new Set(config.fields ?? []);
    const allowedCustom = new Set(config.custom_fields ?? []);
    const refused = [
      ...Object.keys(fields).filter((f) => !allowed.has(f)),
      ...Object.keys(custom ?? {})
        .filter((k) => !allowedCustom.has(k))
        .map((k) => `custom_fields.${k}`),
    ];
    if (refused.length > 0) return { ok: false, error: `fields not allowed: ${refused.join(', ')}`, raw };
  }
  return { ok: true, name: call.name, args: raw, raw };
}
