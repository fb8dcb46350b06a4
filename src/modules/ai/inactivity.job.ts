import type { Db } from '../../db/database.ts';
import type { OutboxJob } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { inactivitySettings } from '../agents/timer-settings.ts';
import type { ConversationOpsService } from '../conversations/conversation-ops.service.ts';
import { aiTimersRepository } from './ai-timers.repository.ts';
import { AI_INACTIVITY_JOB, dueAgainIn } from './timer-jobs.ts';

const tries = repeatableTries(5);

export interface InactivityDeps {
  db: Db;
  conversationOps: Pick<ConversationOpsService, 'afterInactivity'>;
}

/**
 * A conversation without messages for its agent's `inactivity_run_settings.after_minutes` is resolved
 * or archived (docs/ARCHITECTURE.md#the-ai-agents-timers), through ConversationOpsService, which
 * reads the conversation again under its lock: closed, resolved since its last message, or written
 * to since, it does nothing, so a job run again acts once.
 */
export class InactivityJobHandler implements JobHandler {
  readonly kind = AI_INACTIVITY_JOB;
  readonly concurrency = 4;
  readonly leaseSeconds = 60;

  constructor(private readonly deps: InactivityDeps) {}

  async handle(job: OutboxJob): Promise<JobOutcome> {
    try {
      const { db, conversationOps } = this.deps;
      const state = await aiTimersRepository.state(db, job.business_id, job.ref_id);
      if (!state?.agent_id || state.closed_at !== null) return { done: true };
      const settings = inactivitySettings(state.inactivity_run_settings ?? {});
      if (!settings.enabled) return { done: true };
      // Written to since it was scheduled: due again from the last message.
      let due: number | undefined = settings.afterSeconds - state.quiet_seconds;
      if (due <= 0)
        ({ dueInSeconds: due } = await conversationOps.afterInactivity(job.business_id, job.ref_id, {
          agentId: state.agent_id,
          action: settings.action,
          afterSeconds: settings.afterSeconds,
        }));
      if (due === undefined) return { done: true };
      await dueAgainIn(db, job, AI_INACTIVITY_JOB, due);
      return { done: true, recorded: true };
    } catch (err) {
      return tries.afterFailure(job, true, (err as Error).message);
    }
  }

  /** The operation reads the conversation again under its lock: run again, it acts once. */
  onAbandoned(job: OutboxJob): Promise<'retry' | 'give_up'> {
    return tries.onAbandoned(job);
  }
}
