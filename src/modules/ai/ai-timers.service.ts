import type { Db } from '../../db/database.ts';
import type { JobHandler } from '../../jobs/outbox.worker.ts';
import type { ConversationOpsService } from '../conversations/conversation-ops.service.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import type { RepliesService } from '../sending/replies.service.ts';
import { FollowUpJobHandler } from './follow-up.job.ts';
import { InactivityJobHandler } from './inactivity.job.ts';
import type { ChatModel } from './llm-client.ts';
import { ManualControlTimerJobHandler } from './manual-control-timer.job.ts';
import { SentimentJobHandler } from './sentiment.job.ts';
import type { TokenBudget } from './token-budget.ts';

export interface AiTimersDeps {
  db: Db;
  model: ChatModel | undefined;
  replies: Pick<RepliesService, 'agentReplyPlan' | 'lockAgentReply' | 'acceptAgentReply' | 'afterAgentReplies'>;
  budget: Pick<TokenBudget, 'exhausted'>;
  conversationOps: Pick<ConversationOpsService, 'afterInactivity' | 'releaseOnTimer'>;
  domainEvents: Pick<DomainEventDispatcher, 'dispatch'>;
  /** AI_SENTIMENT_QUIET_MINUTES. */
  sentimentQuietMinutes: number;
}

/**
 * The AI agent's timers: the jobs that follow a silence up, act on a quiet conversation, return
 * manual control to the agent, and analyse sentiment.
 */
export class AiTimersService {
  constructor(private readonly deps: AiTimersDeps) {}

  /** The worker side: the handlers of the timers' jobs (register them on the outbox worker). */
  jobHandlers(): JobHandler[] {
    const { db } = this.deps;
    return [
      new FollowUpJobHandler(this.deps),
      new SentimentJobHandler({ ...this.deps, quietSeconds: this.deps.sentimentQuietMinutes * 60 }),
      new InactivityJobHandler({ db, conversationOps: this.deps.conversationOps }),
      new ManualControlTimerJobHandler({ db, conversationOps: this.deps.conversationOps }),
    ];
  }
}
