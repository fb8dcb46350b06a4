import stringify from 'safe-stable-stringify';
import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import { DomainError } from '../../lib/domain-errors.ts';
import { normalisePhone } from '../../lib/phone.ts';
import type { ContactsService } from '../contacts/contacts.service.ts';
import { agentHandover, assignConversation, resolveConversation } from '../conversations/conversation-ops.service.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import * as events from '../events/events.writer.ts';
import type { SearchService } from '../search/search.service.ts';
import { EmbeddingError } from '../search/embeddings.client.ts';
import type { SendPlan } from '../sending/sending.accept.ts';
import type { RepliesService } from '../sending/replies.service.ts';
import { teamsRepository } from '../teams/teams.repository.ts';
import { usersRepository } from '../users/users.repository.ts';
import { stopReason } from './ai-run.rules.ts';
import { aiRunsRepository, type AiRunRow, type RunStatus, type ToolCallRecord } from './ai-runs.repository.ts';
import {
  checkToolCall,
  type AiToolName,
  type CheckedCall,
  type ToolArguments,
  type ToolConfig,
  type TransferTarget,
} from './ai-tools.ts';
import type { ToolCallRequest } from './llm-client.ts';

/** The longest message sent to the customer (WhatsApp's bound of a text message). */
const MESSAGE_MAX_CHARS = 4096;
/** What one search result carries of its item's fields, serialised, at most. */
const RESULT_FIELDS_CHARS = 2000;

/** The run a tool call belongs to: everything a tool acts on comes from here, never from its arguments. */
export interface ToolRunContext {
  job: OutboxJob;
  run: AiRunRow;
  agent: { id: string; tools: Record<string, unknown>; prompt_config: Record<string, unknown> };
  contactId: string;
  enabled: AiToolName[];
}

/** What the model is answered, and whether the run ended with the call (a tool that ends the AI's part, or a stop). */
export interface ToolCallOutcome {
  content: string;
  ended: boolean;
}

/** The hand-over's writes of the run's job (manual control, the alert, the message, the run's end). */
export type HandOverIn = (
  trx: Db,
  job: OutboxJob,
  reason: string,
  given: { run: AiRunRow; plan: SendPlan | undefined },
) => Promise<void>;

export interface AiToolDeps {
  db: Db;
  replies: Pick<RepliesService, 'agentReplyPlan' | 'lockAgentReply' | 'acceptAgentReply' | 'afterAgentReplies'>;
  search: Pick<SearchService, 'similar'> | undefined;
  contacts: Pick<ContactsService, 'updateIn'>;
  handOverIn: HandOverIn;
}

/** What a tool's effect answers: its result or error, and how the run ends when the tool ends it. */
interface Effect {
  result?: unknown;
  error?: string;
  /** A transfer's attempt number in the run. */
  attempt?: number;
  /** The run's end, written with the effect; `handed_over` is written by the hand-over itself. */
  end?: { status: Exclude<RunStatus, 'running'>; outcome: string; reply?: { text: string; messageId: string } };
  handedOver?: boolean;
}

const answer = (effect: { result?: unknown; error?: string }) =>
  JSON.stringify(effect.error !== undefined ? { error: effect.error } : { result: effect.result ?? null });

/** An item's fields for the model, cut to RESULT_FIELDS_CHARS: fields are kept whole, in order, while they fit. */
function boundedFields(payload: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  let size = 2;
  for (const [key, value] of Object.entries(payload)) {
    const entry = JSON.stringify({ [key]: value }).length - 1;
    if (size + entry > RESULT_FIELDS_CHARS) continue;
    kept[key] = value;
    size += entry;
  }
  return kept;
}

/**
 * Runs the tool calls the model asks for, on the run's own business, conversation and contact
 * (docs/ARCHITECTURE.md#the-ai-agents-tools). A call is checked first (an unknown or disabled tool
 * and bad arguments are answered as errors, and recorded); a tool's effect, the record of the call
 * and, for a tool that ends the AI's part, the run's and the job's end are one commit, under the
 * run row's lock, after the conversation is read again as the reply's send reads it.
 */
export class AiToolCalls {
  constructor(private readonly deps: AiToolDeps) {}

  /** Runs `call` of the model's answer `round`; with `refusal`, only answers and records it as that error. */
  async execute(ctx: ToolRunContext, call: ToolCallRequest, round: number, refusal?: string): Promise<ToolCallOutcome> {
    const started = performance.now();
    const tools = ctx.agent.tools as Record<string, ToolConfig>;
    const checked: CheckedCall = refusal
      ? { ok: false, error: refusal, raw: call.arguments.slice(0, 2000) }
      : checkToolCall(call, tools, ctx.enabled);
    const record = (effect: Effect): ToolCallRecord => ({
      id: call.id.slice(0, 200),
      round,
      name: call.name.slice(0, 64),
      arguments: checked.raw,
      ...(effect.error !== undefined ? { error: effect.error } : { result: effect.result ?? null }),
      ...(effect.attempt !== undefined ? { attempt: effect.attempt } : {}),
      latency_ms: Math.round(performance.now() - started),
    });
    if (!checked.ok) return this.act(ctx, record, undefined, async () => ({ error: checked.error }));
    // A call the run made already with these arguments (a run taken up again, a model that repeats
    // itself) answers its recorded result: its effect happened once.
    const done = (await aiRunsRepository.toolCalls(this.deps.db, ctx.job.business_id, ctx.run.id)).find(
      (r) => r.name === checked.name && r.error === undefined && stringify(r.arguments) === stringify(checked.raw),
    );
    if (done && checked.name !== 'search_collection')
      return this.act(ctx, record, undefined, async () => ({ result: done.result }));
    switch (checked.name) {
      case 'search_collection':
        return this.search(ctx, record, checked.args as ToolArguments['search_collection']);
      case 'human_handoff': {
        const args = checked.args as ToolArguments['human_handoff'];
        const plan = await this.messagePlan(ctx, args.message, args.reason);
        return this.act(ctx, record, plan, async (trx) => {
          await this.deps.handOverIn(trx, ctx.job, args.reason, { run: ctx.run, plan });
          return { result: { handed_over: true }, handedOver: true };
        });
      }
      case 'transfer': {
        const args = checked.args as ToolArguments['transfer'];
        const plan = await this.messagePlan(ctx, args.message, args.reason);
        return this.act(ctx, record, plan, (trx) => this.transfer(trx, ctx, args, plan, tools.transfer));
      }
      case 'resolve_conversation': {
        const args = checked.args as ToolArguments['resolve_conversation'];
        return this.act(ctx, record, undefined, async (trx) => {
          const row = await conversationOpsRepository.findForUpdate(trx, ctx.job.business_id, ctx.job.ref_id);
          if (!row) return { error: 'the conversation is gone' };
          await resolveConversation(trx, ctx.job.business_id, row, this.actor(ctx), args.reason);
          return { result: { resolved: true }, end: { status: 'resolved', outcome: 'resolved' } };
        });
      }
      case 'update_contact': {
        const args = checked.args as ToolArguments['update_contact'];
        return this.act(ctx, record, undefined, async (trx) => {
          try {
            await this.deps.contacts.updateIn(trx, ctx.job.business_id, ctx.contactId, args.fields, {
              actorType: 'ai_agent',
              agentId: ctx.agent.id,
              source: 'ai',
            });
          } catch (err) {
            // The update's own rules refused it before writing (too many custom fields, say).
            if (err instanceof DomainError) return { error: err.message };
            throw err;
          }
          return { result: { updated: Object.keys(args.fields) } };
        });
      }
    }
  }

  private actor(ctx: ToolRunContext): events.EventActor {
    return { actorType: 'ai_agent', agentId: ctx.agent.id };
  }

  /** The message to the customer of a hand-over or a transfer: the model's, else the agent's fallback_message. */
  private async messagePlan(ctx: ToolRunContext, message: string | undefined, reason: string) {
    const fallback = ctx.agent.prompt_config.fallback_message;
    const text = message?.trim() || (typeof fallback === 'string' ? fallback.trim() : '');
    if (text === '') return undefined;
    return this.deps.replies
      .agentReplyPlan(ctx.job.business_id, ctx.job.ref_id, {
        agentId: ctx.agent.id,
        text: text.slice(0, MESSAGE_MAX_CHARS),
        botStatus: 'bot_end',
        botStatusReason: reason.slice(0, 500),
      })
      .catch((err: unknown) => {
        // No channel or address to tell the customer on: the hand-over happens without the message.
        if (err instanceof DomainError) return undefined;
        throw err;
      });
  }

  /** search_collection: the query's embedding, then the business's nearest items; read-only, recorded after. */
  private async search(
    ctx: ToolRunContext,
    record: (effect: Effect) => ToolCallRecord,
    args: ToolArguments['search_collection'],
  ): Promise<ToolCallOutcome> {
    let effect: { result?: unknown; error?: string };
    try {
      if (!this.deps.search) throw new DomainError('unavailable', 'unavailable', 'search is not configured');
      const items = await this.deps.search.similar(ctx.job.business_id, args.query, { collection: args.collection });
      effect = {
        result: {
          results: items.map((item) => ({
            collection: item.collection,
            external_id: item.external_id,
            score: Math.round(item.score * 10_000) / 10_000,
            fields: boundedFields(item.payload),
          })),
        },
      };
    } catch (err) {
      if (!(err instanceof DomainError || err instanceof EmbeddingError)) throw err;
      effect = { error: err.message };
    }
    return this.act(ctx, record, undefined, async () => effect);
  }

  /**
   * transfer: to a target the agent's configuration lists, which must still be there in the run's
   * business (a user not removed, a team, a valid number). Accepted: the conversation is assigned
   * (to a user or a team) and goes under manual control, and the run ends `transferred`. Refused
   * while another listed target is available: `transfer_rejected`, and the model may choose again.
   * None available: `transfer_fallback_required`, and the conversation is handed over.
   */
  private async transfer(
    trx: Db,
    ctx: ToolRunContext,
    args: ToolArguments['transfer'],
    plan: SendPlan | undefined,
    config: ToolConfig,
  ): Promise<Effect> {
    const businessId = ctx.job.business_id;
    const targets = config.targets ?? [];
    const available = async (target: TransferTarget) => {
      if (target.user_id) return (await usersRepository.find(trx, businessId, target.user_id, true)) !== undefined;
      if (target.team_id) return (await teamsRepository.find(trx, businessId, target.team_id, true)) !== undefined;
      return target.phone_number !== undefined && normalisePhone(target.phone_number) !== undefined;
    };
    const named = targets.find((t) => t.name === args.target);
    const attempt =
      (await aiRunsRepository.toolCalls(trx, businessId, ctx.run.id)).filter((r) => r.attempt !== undefined).length + 1;
    const row = await conversationOpsRepository.findForUpdate(trx, businessId, ctx.job.ref_id);
    if (!row) return { error: 'the conversation is gone' };
    const actor = this.actor(ctx);
    const targetOf = (t: TransferTarget | undefined) => t?.user_id ?? t?.team_id ?? t?.phone_number ?? null;
    const data = (reason: string, target: string | null): events.TransferData => ({
      reason: reason.slice(0, 500),
      target_user: target,
      attempt_number: attempt,
    });
    if (named && (await available(named))) {
      if (named.user_id || named.team_id)
        await assignConversation(
          trx,
          businessId,
          row,
          actor,
          named.user_id ? { user_id: named.user_id } : { team_id: named.team_id },
        );
      let reply: { text: string; messageId: string } | undefined;
      if (plan)
        reply = { text: plan.text ?? '', messageId: (await this.deps.replies.acceptAgentReply(trx, plan)).messageId };
      await agentHandover(trx, businessId, row.id, ctx.agent.id, args.reason, { alert: false });
      await events.transferAccepted(trx, businessId, row, actor, data(args.reason, targetOf(named)));
      return {
        attempt,
        result: { transferred: true, target: named.name },
        end: { status: 'transferred', outcome: 'transferred', reply },
      };
    }
    const why = named ? `the target ${named.name} is not available` : `no target named ${args.target}`;
    const others = [];
    for (const t of targets) if (t !== named && (await available(t))) others.push(t.name);
    if (others.length > 0) {
      await events.transferRejected(trx, businessId, row, actor, data(why, targetOf(named) ?? args.target));
      return { attempt, error: `${why}; available: ${others.join(', ')}` };
    }
    await events.transferFallbackRequired(trx, businessId, row, actor, data(args.reason, targetOf(named)));
    await this.deps.handOverIn(trx, ctx.job, `transfer: ${why}, and no other target is available`, {
      run: ctx.run,
      plan,
    });
    return {
      attempt,
      error: `${why}; no target is available: the conversation went to a person`,
      handedOver: true,
    };
  }

  /**
   * One tool call's commit: the run row locked (another try of the run may have ended it), the
   * reply's locks when a message goes with it, the conversation read again (manual control, another
   * agent, a newer message or a closed conversation stop the run, and the tool does nothing), then
   * the effect, its record and the run's end.
   */
  private async act(
    ctx: ToolRunContext,
    record: (effect: Effect) => ToolCallRecord,
    plan: SendPlan | undefined,
    effect: (trx: Db) => Promise<Effect>,
  ): Promise<ToolCallOutcome> {
    const { db, replies } = this.deps;
    const businessId = ctx.job.business_id;
    const outcome = await db.transaction().execute(async (trx): Promise<ToolCallOutcome> => {
      if ((await aiRunsRepository.lockStatus(trx, businessId, ctx.run.id)) !== 'running') {
        await outboxRepository.complete(trx, ctx.job);
        return { content: '', ended: true };
      }
      if (plan) await replies.lockAgentReply(trx, plan);
      const stop = stopReason(await aiRunsRepository.runState(trx, businessId, ctx.job.ref_id), ctx.run);
      if (stop) {
        await aiRunsRepository.finish(trx, businessId, ctx.run.id, {
          status: stop === 'superseded' ? 'superseded' : 'skipped',
          outcome: stop,
        });
        await outboxRepository.complete(trx, ctx.job);
        return { content: '', ended: true };
      }
      const done = await effect(trx);
      await aiRunsRepository.addToolCall(trx, businessId, ctx.run.id, record(done));
      if (done.end) {
        await aiRunsRepository.finish(trx, businessId, ctx.run.id, {
          status: done.end.status,
          outcome: done.end.outcome,
          reply_text: done.end.reply?.text ?? null,
          reply_message_id: done.end.reply?.messageId ?? null,
          bot_status: done.end.reply ? 'bot_end' : null,
        });
        await outboxRepository.complete(trx, ctx.job);
      }
      return { content: answer(done), ended: done.end !== undefined || done.handedOver === true };
    });
    await replies.afterAgentReplies();
    return outcome;
  }
}
