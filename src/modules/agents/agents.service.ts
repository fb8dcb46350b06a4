import type { Db } from '../../db/database.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { mergeJson } from '../../lib/json-merge.ts';
import { normalisePhone } from '../../lib/phone.ts';
import { channelsRepository } from '../channels/channels.repository.ts';
import { teamsRepository } from '../teams/teams.repository.ts';
import { usersRepository } from '../users/users.repository.ts';
import { checkActivationRules, type ActivationRules } from './activation-rules.ts';
import { agentsRepository, type AgentValues } from './agents.repository.ts';
import { checkTimerSettings } from './timer-settings.ts';
import {
  AGENT_JSON_FIELDS,
  AGENT_LIMITS,
  type AgentChangesInput,
  type AgentJsonField,
  type AgentRecord,
  type CreateAgentInput,
} from './agents.schemas.ts';

type Tool = { enabled?: boolean; instructions?: string };
type Row = NonNullable<Awaited<ReturnType<typeof agentsRepository.find>>>;

/** What the agents' answers say of the service: whether a model is configured (LLM_URL). */
export interface AgentsContext {
  llmConfigured: boolean;
}

/** Whether an agent answers now, and why not. */
export function agentStatus(
  context: AgentsContext,
  activationRules: Record<string, unknown>,
): Pick<AgentRecord, 'status' | 'inactive_reason'> {
  if (!context.llmConfigured)
    return {
      status: 'inactive',
      inactive_reason: 'no language model is configured (LLM_URL is unset): agents do not answer',
    };
  if ((activationRules as ActivationRules).enabled === false)
    return { status: 'inactive', inactive_reason: 'activation_rules.enabled is false' };
  return { status: 'active', inactive_reason: null };
}

/** The answer of a partial update: id, name and type, and each field the update sent, as it now is. */
export type UpdatedAgent = Pick<AgentRecord, 'id' | 'name' | 'type'> & Partial<AgentRecord>;

/**
 * The AI agents of a business and their configuration: created by the operator, read and partially
 * updated through the public API, assigned to conversations by sends.
 */
export class AgentsService {
  constructor(
    private readonly db: Db,
    private readonly context: AgentsContext = { llmConfigured: false },
  ) {}

  async create(businessId: string, input: CreateAgentInput): Promise<AgentRecord> {
    const values: AgentValues = {
      name: input.name,
      type: input.type ?? 'basic',
      system_prompt: input.system_prompt ?? '',
      model: input.model ?? null,
      ...jsonFields((field) => input[field] ?? {}),
    };
    if (input.tools) values.tools = completeTools(input.tools, input.tools);
    checkSizes(values);
    if (input.tools) await checkTransferTargets(this.db, businessId, values.tools, '/tools');
    if (input.activation_rules)
      await this.checkRules(this.db, businessId, values.activation_rules, '/activation_rules');
    return this.toRecord(await agentsRepository.insert(this.db, businessId, newId(), values));
  }

  async list(businessId: string, limit: number) {
    const rows = await agentsRepository.list(this.db, businessId, limit);
    return rows.map(({ activation_rules, ...row }) => ({ ...row, ...agentStatus(this.context, activation_rules) }));
  }

  async get(businessId: string, agentId: string): Promise<AgentRecord> {
    const row = await agentsRepository.find(this.db, businessId, agentId);
    if (!row) throw notFound('agent');
    return this.toRecord(row);
  }

  /**
   * Applies `changes` (nulls already dropped): name, type, system_prompt and model replace; each JSON
   * field is merged into the stored one at every depth (mergeJson). The row is locked while it is
   * read, merged and written, so two updates at once both land. Nothing sent: nothing written.
   */
  async update(businessId: string, agentId: string, changes: AgentChangesInput): Promise<UpdatedAgent> {
    return this.db.transaction().execute(async (trx) => {
      const current = await agentsRepository.findForUpdate(trx, businessId, agentId);
      if (!current) throw notFound('agent');
      const { name, type, system_prompt, model } = { ...current, ...changes };
      const values: AgentValues = {
        name,
        type,
        system_prompt,
        model,
        ...jsonFields((field) =>
          changes[field] === undefined ? current[field] : mergeJson(current[field], changes[field]),
        ),
      };
      if (changes.tools) values.tools = completeTools(values.tools as Record<string, Tool>, changes.tools);
      checkSizes(values);
      if (changes.tools) await checkTransferTargets(trx, businessId, values.tools, '/agent/tools');
      if (changes.activation_rules !== undefined)
        await this.checkRules(trx, businessId, values.activation_rules, '/agent/activation_rules');
      for (const field of ['follow_up_settings', 'inactivity_run_settings'] as const)
        if (changes[field] !== undefined) checkTimerSettings(field, values[field]);
      const sent = Object.keys(changes) as (keyof AgentRecord)[];
      const row = sent.length === 0 ? current : await agentsRepository.update(trx, businessId, agentId, values);
      const record = this.toRecord(row);
      const answer: UpdatedAgent = { id: record.id, name: record.name, type: record.type };
      for (const field of sent) Object.assign(answer, { [field]: record[field] });
      return answer;
    });
  }

  /**
   * The rules as they will be stored: their own checks, and channels of the business (400 otherwise),
   * refused at `bodyPath`, where the rules sit in the request's body.
   */
  private async checkRules(
    db: Db,
    businessId: string,
    rules: Record<string, unknown>,
    bodyPath: string,
  ): Promise<void> {
    const typed = rules as ActivationRules;
    checkActivationRules(typed, bodyPath);
    for (const [i, id] of (typed.channels ?? []).entries()) {
      if (!(await channelsRepository.find(db, businessId, id)))
        throw invalid('activation_rules.channels names a channel the business does not have', [
          { location: 'body', path: `${bodyPath}/channels/${i}`, message: 'not a channel of the business' },
        ]);
    }
  }

  private toRecord(row: Row): AgentRecord {
    return {
      ...row,
      tools: row.tools,
      ...agentStatus(this.context, row.activation_rules),
    };
  }
}

/** The JSON fields of an agent, each as `value` gives it. */
function jsonFields(value: (field: AgentJsonField) => Record<string, unknown>) {
  return Object.fromEntries(AGENT_JSON_FIELDS.map((field) => [field, value(field)])) as Record<
    AgentJsonField,
    Record<string, unknown>
  >;
}

/**
 * The tools after an update: each tool the update names must end up with `enabled` (a new tool
 * must send it), and `instructions` default to "".
 */
function completeTools(tools: Record<string, Tool>, sent: Record<string, Tool>): Record<string, Tool> {
  for (const name of Object.keys(sent)) {
    const tool = Object.hasOwn(tools, name) ? tools[name] : {};
    if (typeof tool.enabled !== 'boolean') {
      throw invalid(`tool "${name}" is new: send its enabled`, [
        { location: 'body', path: `/agent/tools/${name}/enabled`, message: 'required for a new tool' },
      ]);
    }
    tool.instructions ??= '';
  }
  return tools;
}

/**
 * The transfer tool's targets as they will be stored: each names exactly one user, team or phone
 * number, under a name no other target has; users and teams of the business (not removed), numbers
 * with a country code. 400 otherwise. A target removed later is refused by the run itself.
 */
async function checkTransferTargets(
  db: Db,
  businessId: string,
  tools: Record<string, unknown>,
  /** Where the tools are in the body: `/tools` on create, `/agent/tools` on a partial update. */
  at: string,
): Promise<void> {
  const targets = (tools.transfer as { targets?: Record<string, string | undefined>[] } | undefined)?.targets ?? [];
  const names = new Set<string>();
  for (const [i, target] of targets.entries()) {
    const refuse = (message: string, field = '') =>
      invalid(`tools.transfer.targets[${i}]: ${message}`, [
        { location: 'body', path: `${at}/transfer/targets/${i}${field}`, message },
      ]);
    const kinds = (['user_id', 'team_id', 'phone_number'] as const).filter((k) => target[k] !== undefined);
    if (kinds.length !== 1) throw refuse('name exactly one of user_id, team_id, phone_number');
    if (names.has(target.name!)) throw refuse(`another target is named ${target.name}`, '/name');
    names.add(target.name!);
    if (target.user_id && !(await usersRepository.find(db, businessId, target.user_id)))
      throw refuse('not a user of the business', '/user_id');
    if (target.team_id && !(await teamsRepository.find(db, businessId, target.team_id)))
      throw refuse('not a team of the business', '/team_id');
    if (target.phone_number && !normalisePhone(target.phone_number))
      throw refuse('not a phone number with country code', '/phone_number');
  }
}

/**
 * The bounds of the schema (keys of each JSON field, tools) and AGENT_LIMITS.jsonFieldBytes, on
 * what is stored: a partial update is checked by the schema alone, and updates add up.
 */
function checkSizes(values: AgentValues): void {
  for (const field of AGENT_JSON_FIELDS) {
    const value = values[field];
    const maxKeys = field === 'tools' ? AGENT_LIMITS.tools : AGENT_LIMITS.jsonKeys;
    if (Object.keys(value).length > maxKeys) {
      throw invalid(`${field} would hold more than ${maxKeys} keys`, [
        { location: 'body', path: `/agent/${field}`, message: 'too many keys' },
      ]);
    }
    if (Buffer.byteLength(JSON.stringify(value)) > AGENT_LIMITS.jsonFieldBytes) {
      throw invalid(`${field} is larger than ${AGENT_LIMITS.jsonFieldBytes} bytes`, [
        { location: 'body', path: `/agent/${field}`, message: 'too large' },
      ]);
    }
  }
}
