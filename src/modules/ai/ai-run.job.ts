import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { DomainError } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { agentsRepository } from '../agents/agents.repository.ts';
import { contactsRepository, type ContactRow } from '../contacts/contacts.repository.ts';
import { agentHandover } from '../conversations/conversation-ops.service.ts';
import type { SendPlan } from '../sending/sending.accept.ts';
import type { RepliesService } from '../sending/replies.service.ts';
import type { ContactsService } from '../contacts/contacts.service.ts';
import type { SearchService } from '../search/search.service.ts';
import { buildPrompt, quotesInstructions } from './ai-prompt.ts';
import { stopReason } from './ai-run.rules.ts';
import { aiRunsRepository, type AiRunRow, type RunMessage, type ToolCallRecord } from './ai-runs.repository.ts';
import { AiToolCalls } from './ai-tool-calls.ts';
import { enabledTools, offeredTools, type ToolConfig } from './ai-tools.ts';
import { ModelError, type ChatMessage, type ChatModel } from './llm-client.ts';
import { BUDGET_EXHAUSTED, type TokenBudget } from './token-budget.ts';

/** The outbox kind of a run: one waiting job per conversation (ref_id), scheduled by ai-run.subscriber.ts. */
export const AI_RUN_JOB = 'ai_run';

/** Latest messages of the conversation read for the prompt, before its token bound. */
const HISTORY_MESSAGES = 50;
/** The longest reply sent (WhatsApp's bound of a text message). */
const REPLY_MAX_CHARS = 4096;
/** Model calls that asked for tools, at most, before the run hands the conversation to a person. */
export const MAX_TOOL_ROUNDS = 4;
/** Tool calls one answer of the model may ask for; those past it are answered as errors. */
const MAX_CALLS_PER_ROUND = 5;
/** Tries of a run that fails unexpectedly (not the model: a database error, a bug) before a person takes over. */
const tries = repeatableTries(5);

type Agent = NonNullable<Awaited<ReturnType<typeof agentsRepository.find>>>;

export interface AiRunDeps {
  db: Db;
  /** Undefined without LLM_URL: a run that finds none ends without answering. */
  model: ChatModel | undefined;
  replies: Pick<RepliesService, 'agentReplyPlan' | 'lockAgentReply' | 'acceptAgentReply' | 'afterAgentReplies'>;
  /** The search of search_collection; undefined without EMBEDDINGS_URL (the tool is not offered). */
  search?: Pick<SearchService, 'similar' | 'searchable'>;
  /** The contacts' update path of update_contact. */
  contacts: Pick<ContactsService, 'updateIn'>;
  log: { error(obj: object, msg: string): void };
  /** Runs in hand at once (LLM_CONCURRENCY). */
  concurrency?: number;
  /** The business's daily token budget; a run past it hands the conversation to a person unasked. */
  budget?: Pick<TokenBudget, 'exhausted'>;
}

/** The messages a run answers: the inbound ones after the business's latest message. */
function unanswered(history: RunMessage[]): string[] {
  const ids: string[] = [];
  for (let i = history.length - 1; i >= 0 && history[i].direction === 'inbound'; i--) ids.unshift(history[i].id);
  return ids;
}

/**
 * One run of a conversation's AI agent (docs/ARCHITECTURE.md#the-ai-agents-run): find or start the
 * run's record for the newest inbound message, check the conversation still wants an answer, build
 * the prompt, call the model (running the tool calls it asks for, each in its own commit, and calling
 * it again, up to MAX_TOOL_ROUNDS times), and send the reply as the agent, in one transaction with
 * the run's end and the job's: a run taken up again after a crash finds its record answered and
 * sends nothing, or carries on after the tool calls it recorded. A model that fails after its
 * retries, or keeps asking for tools, hands the conversation to people.
 */
export class AiRunJobHandler implements JobHandler {
  readonly kind = AI_RUN_JOB;
  /** Most of a run waits for the model: LLM_CONCURRENCY of them at once (8 without a model, when runs only end). */
  readonly concurrency: number;
  /** Longer than a model call with its retries (LLM_TIMEOUT_SECONDS, LLM_MAX_RETRIES) takes by default. */
  readonly leaseSeconds = 300;

  private readonly toolCalls: AiToolCalls;

  constructor(private readonly deps: AiRunDeps) {
    this.concurrency = deps.concurrency ?? 8;
    this.toolCalls = new AiToolCalls({
      db: deps.db,
      replies: deps.replies,
      search: deps.search?.searchable ? deps.search : undefined,
      contacts: deps.contacts,
      handOverIn: (trx, job, reason, given) => this.handOverIn(trx, job, reason, given),
    });
  }

  async handle(job: OutboxJob): Promise<JobOutcome> {
    try {
      return await this.run(job);
    } catch (err) {
      // A newer message's job waits already: it answers this one's messages too, and only one may wait.
      if (await outboxRepository.hasWaiting(this.deps.db, job)) {
        await this.supersede(this.deps.db, job);
        return { done: true };
      }
      const outcome = tries.afterFailure(job, true, (err as Error).message);
      if (!('failed' in outcome)) return outcome;
      this.deps.log.error({ err, jobId: job.id }, 'AI run failed; the conversation goes to a person');
      await this.abandon(job, `the AI agent's run failed: ${(err as Error).message}`);
      return { done: true, recorded: true };
    }
  }

  /**
   * A run whose worker stopped is run again (its record and the reply's key keep it from sending
   * twice), unless a newer job of the conversation waits; one that stopped its worker every time
   * goes to a person.
   */
  async onAbandoned(job: OutboxJob, trx: Db): Promise<'retry' | 'give_up'> {
    // A newer message's job waits already (only one may wait): it answers this one's messages too.
    if (await outboxRepository.hasWaiting(trx, job)) {
      await this.supersede(trx, job);
      return 'give_up';
    }
    if ((await tries.onAbandoned(job)) === 'retry') return 'retry';
    await this.handOverIn(trx, job, 'the AI agent stopped before answering', null);
    return 'give_up';
  }

  private async run(job: OutboxJob): Promise<JobOutcome> {
    const { db, model } = this.deps;
    const businessId = job.business_id;
    const conversationId = job.ref_id;
    const state = await aiRunsRepository.runState(db, businessId, conversationId);
    if (!state?.agent_id || !state.newest_inbound_id) return { done: true };
    const history = await aiRunsRepository.recentMessages(db, businessId, conversationId, HISTORY_MESSAGES);
    const run = await aiRunsRepository.start(db, {
      business_id: businessId,
      id: newId(),
      conversation_id: conversationId,
      agent_id: state.agent_id,
      trigger_message_id: state.newest_inbound_id,
      input_message_ids: unanswered(history),
    });
    await aiRunsRepository.supersedeOlder(db, businessId, conversationId, run.trigger_message_id);
    // Answered, or ended otherwise, by an earlier try of this job.
    if (run.status !== 'running') return { done: true };
    const stop = model ? stopReason(state, run) : 'no_model';
    const agent = await agentsRepository.find(db, businessId, run.agent_id);
    if (stop || !agent || !model) {
      await this.end(job, run, stop === 'superseded' ? 'superseded' : 'skipped', stop ?? 'agent_removed');
      return { done: true, recorded: true };
    }
    if (await this.deps.budget?.exhausted(businessId)) {
      await this.handOver(job, run, agent, "the business's daily token budget is used up", {
        outcome: BUDGET_EXHAUSTED,
      });
      return { done: true, recorded: true };
    }
    const contact = await contactsRepository.find(db, businessId, state.contact_id);
    const tools = agent.tools as Record<string, ToolConfig>;
    const enabled = enabledTools(tools, { searchable: this.deps.search?.searchable === true });
    const prompt = await buildPrompt({ agent, contact: knownFields(contact), history, tools: enabled.length > 0 });
    const config = agent.prompt_config as { max_reply_tokens?: number; temperature?: number };
    const offered = offeredTools(tools, enabled);
    // A run taken up again carries on after the tool calls it recorded, which the model reads again.
    const messages: ChatMessage[] = [...prompt.messages, ...replayed(run.tool_calls as ToolCallRecord[])];
    let round = Math.max(0, ...(run.tool_calls as ToolCallRecord[]).map((c) => c.round));
    const context = { job, run, agent, contactId: state.contact_id, enabled };
    for (;;) {
      let answer;
      try {
        answer = await model.complete({
          model: agent.model ?? model.defaultModel,
          messages,
          maxTokens: config.max_reply_tokens,
          temperature: config.temperature,
          tools: offered,
        });
        await aiRunsRepository.addModelCall(db, businessId, run.id, answer.call);
      } catch (err) {
        if (!(err instanceof ModelError)) throw err;
        await aiRunsRepository.addModelCall(db, businessId, run.id, err.call);
        await this.handOver(job, run, agent, `the model failed: ${err.message}`);
        return { done: true, recorded: true };
      }
      if (answer.toolCalls.length === 0) {
        await this.deliver(job, run, agent, answer.text.slice(0, REPLY_MAX_CHARS));
        return { done: true, recorded: true };
      }
      if (round >= MAX_TOOL_ROUNDS) {
        await this.handOver(job, run, agent, `the model asked for tools more than ${MAX_TOOL_ROUNDS} times`);
        return { done: true, recorded: true };
      }
      round += 1;
      messages.push({
        role: 'assistant',
        content: answer.text || null,
        tool_calls: answer.toolCalls.map((c) => ({
          id: c.id,
          type: 'function' as const,
          function: { name: c.name, arguments: c.arguments },
        })),
      });
      for (const [i, call] of answer.toolCalls.entries()) {
        const outcome = await this.toolCalls.execute(
          context,
          call,
          round,
          i < MAX_CALLS_PER_ROUND ? undefined : `at most ${MAX_CALLS_PER_ROUND} tool calls in one answer`,
        );
        if (outcome.ended) return { done: true, recorded: true };
        messages.push({ role: 'tool', tool_call_id: call.id, content: outcome.content });
      }
    }
  }

  /**
   * Sends the reply, if the conversation still wants it once its writers' locks are held: no manual
   * control, the same agent, no newer inbound message (that one's run answers both). The reply, the
   * run's end and the job's are one commit.
   */
  private async deliver(job: OutboxJob, run: AiRunRow, agent: Agent, text: string): Promise<void> {
    const { db, replies } = this.deps;
    const businessId = job.business_id;
    // The model obeying a customer who asked for the agent's instructions: not sent, a person looks.
    if (quotesInstructions(text, agent.system_prompt)) {
      await this.handOver(job, run, agent, "the reply quoted the agent's instructions");
      return;
    }
    const botStatus = (await aiRunsRepository.agentHasReplied(db, businessId, run.conversation_id))
      ? undefined
      : ('bot_start' as const);
    let plan: SendPlan;
    try {
      plan = await replies.agentReplyPlan(businessId, run.conversation_id, { agentId: agent.id, text, botStatus });
    } catch (err) {
      // The conversation has no channel or address to answer on: a person has to look.
      if (!(err instanceof DomainError)) throw err;
      await this.handOver(job, run, agent, `the reply cannot be sent: ${err.message}`, { notify: false });
      return;
    }
    let sent: boolean;
    try {
      sent = await this.send(job, run, plan, text, botStatus);
    } catch (err) {
      // The send refused the reply (an opted-out contact, a closed window): a person has to look.
      if (!(err instanceof DomainError)) throw err;
      await this.handOver(job, run, agent, `the reply was refused: ${err.message}`, { notify: false });
      return;
    }
    if (sent) await replies.afterAgentReplies();
  }

  /** The transaction of deliver: true when the reply was accepted. */
  private send(
    job: OutboxJob,
    run: AiRunRow,
    plan: SendPlan,
    text: string,
    botStatus: 'bot_start' | undefined,
  ): Promise<boolean> {
    const { db, replies } = this.deps;
    const businessId = job.business_id;
    return db.transaction().execute(async (trx) => {
      if ((await aiRunsRepository.lockStatus(trx, businessId, run.id)) !== 'running') {
        await outboxRepository.complete(trx, job);
        return false;
      }
      await replies.lockAgentReply(trx, plan);
      const stop = stopReason(await aiRunsRepository.runState(trx, businessId, run.conversation_id), run);
      if (stop) {
        await aiRunsRepository.finish(trx, businessId, run.id, {
          status: stop === 'superseded' ? 'superseded' : 'skipped',
          outcome: stop,
          reply_text: text,
        });
        await outboxRepository.complete(trx, job);
        return false;
      }
      const { messageId } = await replies.acceptAgentReply(trx, plan);
      await aiRunsRepository.finish(trx, businessId, run.id, {
        status: 'replied',
        outcome: 'replied',
        reply_text: text,
        reply_message_id: messageId,
        bot_status: botStatus ?? null,
      });
      await outboxRepository.complete(trx, job);
      return true;
    });
  }

  /**
   * The agent cannot answer: the customer gets the agent's fallback_message (with bot_end) while no
   * person has taken over, and the conversation goes to people (manual control, alert_triggered).
   */
  private async handOver(
    job: OutboxJob,
    run: AiRunRow,
    agent: Agent,
    reason: string,
    options: { notify?: boolean; outcome?: string } = {},
  ): Promise<void> {
    const { db, replies } = this.deps;
    const fallback = agent.prompt_config.fallback_message;
    let plan: SendPlan | undefined;
    if (options.notify !== false && typeof fallback === 'string' && fallback.trim() !== '') {
      plan = await replies
        .agentReplyPlan(job.business_id, run.conversation_id, {
          agentId: agent.id,
          text: fallback.slice(0, REPLY_MAX_CHARS),
          botStatus: 'bot_end',
          botStatusReason: 'ai_handover',
        })
        .catch(() => undefined);
    }
    await db.transaction().execute(async (trx) => {
      if ((await aiRunsRepository.lockStatus(trx, job.business_id, run.id)) !== 'running') {
        await outboxRepository.complete(trx, job);
        return;
      }
      if (plan) await replies.lockAgentReply(trx, plan);
      await this.handOverIn(trx, job, reason, { run, plan, outcome: options.outcome });
    });
    await replies.afterAgentReplies();
  }

  /**
   * The hand-over's writes in `trx`: the fallback reply (while no person has taken over), manual
   * control and the alert, the run's end (the job's run, or any it left running) and the job's.
   */
  private async handOverIn(
    trx: Db,
    job: OutboxJob,
    reason: string,
    given: { run: AiRunRow; plan: SendPlan | undefined; outcome?: string } | null,
  ): Promise<void> {
    const businessId = job.business_id;
    const state = await aiRunsRepository.runState(trx, businessId, job.ref_id);
    const run = given?.run ?? (await aiRunsRepository.running(trx, businessId, job.ref_id));
    const agentId = run?.agent_id ?? state?.agent_id;
    if (!state || !agentId) {
      await outboxRepository.complete(trx, job);
      return;
    }
    let messageId: string | null = null;
    if (given?.plan && !state.manual_control)
      messageId = (await this.deps.replies.acceptAgentReply(trx, given.plan)).messageId;
    await agentHandover(trx, businessId, job.ref_id, agentId, reason.slice(0, 500));
    if (run)
      await aiRunsRepository.finish(trx, businessId, run.id, {
        status: 'handed_over',
        outcome: given?.outcome ?? 'handed_over',
        error: reason,
        reply_text: messageId ? (given?.plan?.text ?? null) : null,
        reply_message_id: messageId,
        bot_status: messageId ? 'bot_end' : null,
      });
    await outboxRepository.complete(trx, job);
  }

  /** The hand-over of a run that failed unexpectedly, in its own transaction. */
  private async abandon(job: OutboxJob, reason: string): Promise<void> {
    await this.deps.db.transaction().execute((trx) => this.handOverIn(trx, job, reason, null));
    await this.deps.replies.afterAgentReplies();
  }

  /** Ends the run a job left running when a newer job of the conversation takes over its messages. */
  private async supersede(db: Db, job: OutboxJob): Promise<void> {
    const run = await aiRunsRepository.running(db, job.business_id, job.ref_id);
    if (run)
      await aiRunsRepository.finish(db, job.business_id, run.id, { status: 'superseded', outcome: 'superseded' });
  }

  /** Ends a run that sends nothing, with the job. */
  private async end(job: OutboxJob, run: AiRunRow, status: 'skipped' | 'superseded', outcome: string) {
    await this.deps.db.transaction().execute(async (trx) => {
      await aiRunsRepository.finish(trx, job.business_id, run.id, { status, outcome });
      await outboxRepository.complete(trx, job);
    });
  }
}

/** The chat messages of the tool calls a run recorded: per round, the model's calls and their answers. */
function replayed(records: ToolCallRecord[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const rounds = [...new Set(records.map((r) => r.round))].sort((a, b) => a - b);
  for (const round of rounds) {
    const calls = records.filter((r) => r.round === round);
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: {
          name: c.name,
          arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
        },
      })),
    });
    for (const c of calls)
      messages.push({
        role: 'tool',
        tool_call_id: c.id,
        content: JSON.stringify(c.error !== undefined ? { error: c.error } : { result: c.result ?? null }),
      });
  }
  return messages;
}

/** The contact's known fields for the prompt: those with a value. */
function knownFields(contact: ContactRow | undefined): Record<string, unknown> {
  if (!contact) return {};
  const fields: Record<string, unknown> = {
    first_name: contact.first_name,
    last_name: contact.last_name,
    email: contact.email,
    phone_number: contact.phone_number,
    tags: contact.tags,
    custom_fields: contact.custom_fields,
  };
  return Object.fromEntries(
    Object.entries(fields).filter(
      ([, v]) =>
        v !== null &&
        v !== '' &&
        !(Array.isArray(v) && v.length === 0) &&
        !(typeof v === 'object' && v !== null && Object.keys(v).length === 0),
    ),
  );
}
