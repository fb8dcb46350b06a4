import type { Db } from '../../db/database.ts';
import type { OutboxJob } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { inactivitySettings } from '../agents/timer-settings.ts';
import type { ConversationOpsService } from '../conversations/conversation-ops.service.ts';
import { aiTimersRepository } from './ai-timers.repository.ts';
import { AI_MANUAL_CONTROL_JOB, dueAgainIn } from './timer-jobs.ts';

const tries = repeatableTries(5);

export interface ManualControlTimerDeps {
  db: Db;
  conversationOps: Pick<ConversationOpsService, 'releaseOnTimer'>;
}

/**
 * Manual control returns to the agent `inactivity_run_settings.manual_control_release_minutes` after
 * it was last turned on or unpinned, unless pinned (docs/ARCHITECTURE.md#the-ai-agents-timers):
 * `manual_control_released` with reason `timer`, through ConversationOpsService, which reads the
 * conversation again under its lock. A release by hand or a pin makes it do nothing; a newer
 * activation makes it due again from that one; run again, it releases once.
 */
export class ManualControlTimerJobHandler implements JobHandler {
  readonly kind = AI_MANUAL_CONTROL_JOB;
  readonly concurrency = 4;
  readonly leaseSeconds = 60;

  constructor(private readonly deps: ManualControlTimerDeps) {}

  async handle(job: OutboxJob): Promise<JobOutcome> {
    try {
      const { db, conversationOps } = this.deps;
      const state = await aiTimersRepository.state(db, job.business_id, job.ref_id);
      if (!state?.agent_id || !state.manual_control || state.manual_control_locked) return { done: true };
      const after = inactivitySettings(state.inactivity_run_settings ?? {}).releaseAfterSeconds;
      if (after === null) return { done: true };
      const { dueInSeconds } = await conversationOps.releaseOnTimer(job.business_id, job.ref_id, {
        agentId: state.agent_id,
        afterSeconds: after,
      });
      if (dueInSeconds === undefined) return { done: true };
      await dueAgainIn(db, job, AI_MANUAL_CONTROL_JOB, dueInSeconds);
      return { done: true, recorded: true };
    } catch (err) {
      return tries.afterFailure(job, true, (err as Error).message);
    }
  }

  /** The release reads the conversation again under its lock: run again, it releases once. */
  onAbandoned(job: OutboxJob): Promise<'retry' | 'give_up'> {
    return tries.onAbandoned(job);
  }
}
