import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import type { JobHandler, JobOutcome } from '../../jobs/outbox.worker.ts';
import { DomainError } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { agentsRepository } from '../agents/agents.repository.ts';
import { followUpSettings } from '../agents/timer-settings.ts';
import type { RepliesService } from '../sending/replies.service.ts';
import type { SendPlan } from '../sending/sending.accept.ts';
import { buildPrompt } from './ai-prompt.ts';
import { aiRunsRepository, type AiRunRow } from './ai-runs.repository.ts';
import { aiTimersRepository } from './ai-timers.repository.ts';
import { ModelError, type ChatModel } from './llm-client.ts';
import {
  AI_FOLLOW_UP_JOB,
  afterRecordedTimerFailure,
  onRecordedTimerAbandoned,
  dueAgainIn,
  endRun,
} from './timer-jobs.ts';
import { BUDGET_EXHAUSTED, type TokenBudget } from './token-budget.ts';

/** Latest messages of the conversation the model reads to write a follow-up. */
const HISTORY_MESSAGES = 50;
/** The longest follow-up sent (WhatsApp's bound of a text message). */
const REPLY_MAX_CHARS = 4096;

const INSTRUCTION =
  'The customer has not answered your last message. Write one short, friendly follow-up to them, in the ' +
  'language of the conversation: ask whether they still need help. Do not repeat your last message.';

export interface FollowUpDeps {
  db: Db;
  /** Undefined without LLM_URL: a follow-up without a fixed message is then not sent. */
  model: ChatModel | undefined;
  replies: Pick<RepliesService, 'agentReplyPlan' | 'lockAgentReply' | 'acceptAgentReply' | 'afterAgentReplies'>;
  budget: Pick<TokenBudget, 'exhausted'>;
}

/**
 * A follow-up after the customer's silence (the agent's `follow_up_settings`,
 * docs/ARCHITECTURE.md#the-ai-agents-timers): when the agent's message is still the conversation's
 * newest after `after_minutes`, the agent sends the fixed message or one the model writes, at most
 * `max_follow_ups` per silence. Its record (`ai_runs`, kind follow_up) is one per message followed
 * up, and the send, the record's end and the job's end are one commit, so a job run again sends
 * nothing twice. The follow-up's own message schedules the next one.
 */
export class FollowUpJobHandler implements JobHandler {
  readonly kind = AI_FOLLOW_UP_JOB;
  readonly concurrency = 4;
  /** Longer than a model call with its retries takes by default, as a reply's. */
  readonly leaseSeconds = 300;

  constructor(private readonly deps: FollowUpDeps) {}

  async handle(job: OutboxJob): Promise<JobOutcome> {
    return this.run(job).catch((err: unknown) => afterRecordedTimerFailure(this.deps.db, job, 'follow_up', err));
  }

  /** Its record and the send's single commit keep a follow-up run again from sending twice. */
  onAbandoned(job: OutboxJob): Promise<'retry' | 'give_up'> {
    return onRecordedTimerAbandoned(job);
  }

  private async run(job: OutboxJob): Promise<JobOutcome> {
    const { db } = this.deps;
    const businessId = job.business_id;
    const conversationId = job.ref_id;
    const state = await aiTimersRepository.state(db, businessId, conversationId);
    if (!state?.agent_id || state.closed_at !== null || state.manual_control) return { done: true };
    const settings = followUpSettings(state.follow_up_settings ?? {});
    if (!settings.enabled || state.activation_rules?.enabled === false) return { done: true };
    // Only the agent's own message, still the newest, is followed up: anyone who wrote since ends the silence.
    const last = await aiTimersRepository.newestMessage(db, businessId, conversationId);
    if (!last || last.sender_type !== 'ai_agent' || last.agent_id !== state.agent_id) return { done: true };
    if (last.age_seconds < settings.afterSeconds) {
      await dueAgainIn(db, job, AI_FOLLOW_UP_JOB, settings.afterSeconds - last.age_seconds);
      return { done: true, recorded: true };
    }
    const silence = await aiTimersRepository.newestInboundId(db, businessId, conversationId);
    const sent = await aiTimersRepository.followUpsSent(db, businessId, conversationId, silence, settings.maxFollowUps);
    if (sent >= settings.maxFollowUps) return { done: true };
    const run = await aiTimersRepository.start(db, {
      business_id: businessId,
      id: newId(),
      conversation_id: conversationId,
      agent_id: state.agent_id,
      kind: 'follow_up',
      trigger_message_id: last.id,
      input_message_ids: silence === null ? [] : [silence],
    });
    // Sent, or ended otherwise, by an earlier try of this job.
    if (run.status !== 'running') return { done: true };
    const text = settings.message ?? (await this.write(job, run));
    if (text !== undefined) await this.deliver(job, run, text.slice(0, REPLY_MAX_CHARS));
    return { done: true, recorded: true };
  }

  /** The follow-up the model writes from the conversation; undefined when the run ended without one. */
  private async write(job: OutboxJob, run: AiRunRow): Promise<string | undefined> {
    const { db, model, budget } = this.deps;
    const agent = await agentsRepository.find(db, job.business_id, run.agent_id);
    if (!model || !agent) {
      await endRun(db, job, run, { status: 'skipped', outcome: model ? 'agent_removed' : 'no_model' });
      return undefined;
    }
    if (await budget.exhausted(job.business_id)) {
      await endRun(db, job, run, { status: 'skipped', outcome: BUDGET_EXHAUSTED });
      return undefined;
    }
    const history = await aiRunsRepository.recentMessages(db, job.business_id, run.conversation_id, HISTORY_MESSAGES);
    const prompt = await buildPrompt({ agent, contact: {}, history });
    const config = agent.prompt_config as { max_reply_tokens?: number; temperature?: number };
    try {
      const answer = await model.complete({
        model: agent.model ?? model.defaultModel,
        messages: [...prompt.messages, { role: 'system', content: INSTRUCTION }],
        maxTokens: config.max_reply_tokens,
        temperature: config.temperature,
      });
      await aiRunsRepository.addModelCall(db, job.business_id, run.id, answer.call);
      return answer.text;
    } catch (err) {
      if (!(err instanceof ModelError)) throw err;
      // Nobody waits for a follow-up: a model that fails sends none, and no person is called.
      await aiRunsRepository.addModelCall(db, job.business_id, run.id, err.call);
      await endRun(db, job, run, { status: 'failed', outcome: 'model_failed', error: err.message });
      return undefined;
    }
  }

  /**
   * Sends the follow-up if the conversation still wants it once its writers' locks are held: open, no
   * manual control, the same agent, nothing written since the message followed up.
   */
  private async deliver(job: OutboxJob, run: AiRunRow, text: string): Promise<void> {
    const { db, replies } = this.deps;
    let plan: SendPlan;
    let sent: boolean;
    try {
      plan = await replies.agentReplyPlan(job.business_id, run.conversation_id, { agentId: run.agent_id, text });
      sent = await db.transaction().execute(async (trx) => {
        if ((await aiRunsRepository.lockStatus(trx, job.business_id, run.id)) !== 'running') {
          await outboxRepository.complete(trx, job);
          return false;
        }
        await replies.lockAgentReply(trx, plan);
        const stop = await stopReason(trx, job, run);
        if (stop) {
          await aiRunsRepository.finish(trx, job.business_id, run.id, {
            status: 'skipped',
            outcome: stop,
            reply_text: text,
          });
          await outboxRepository.complete(trx, job);
          return false;
        }
        const { messageId } = await replies.acceptAgentReply(trx, plan);
        await aiRunsRepository.finish(trx, job.business_id, run.id, {
          status: 'replied',
          outcome: 'follow_up',
          reply_text: text,
          reply_message_id: messageId,
        });
        await outboxRepository.complete(trx, job);
        return true;
      });
    } catch (err) {
      // No channel or address to send on, or the send refused it (an opted-out contact, a closed window).
      if (!(err instanceof DomainError)) throw err;
      await endRun(db, job, run, { status: 'skipped', outcome: 'not_sent', error: err.message, reply_text: text });
      return;
    }
    if (sent) await replies.afterAgentReplies();
  }
}

/** Why the follow-up is no longer wanted, read under the conversation's locks; null when it is. */
async function stopReason(trx: Db, job: OutboxJob, run: AiRunRow): Promise<string | null> {
  const state = await aiTimersRepository.state(trx, job.business_id, run.conversation_id);
  if (!state || state.closed_at !== null) return 'closed';
  if (state.manual_control) return 'manual_control';
  if (state.agent_id !== run.agent_id) return 'agent_changed';
  const last = await aiTimersRepository.newestMessage(trx, job.business_id, run.conversation_id);
  return last?.id === run.trigger_message_id ? null : 'superseded';
}
