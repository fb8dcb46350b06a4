import type { Db } from '../../db/database.ts';
import { outboxRepository, type OnePerRefKind, type OutboxJob } from '../../jobs/outbox.repository.ts';
import { repeatableTries, scheduleJobs, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { aiRunsRepository, type AiRunRow, type RunStatus } from './ai-runs.repository.ts';
import { aiTimersRepository } from './ai-timers.repository.ts';

/**
 * The outbox kinds of the AI agent's timers, each keeping one waiting job per conversation (ref_id),
 * scheduled by ai-timers.subscriber.ts.
 */
export const AI_SENTIMENT_JOB = 'ai_sentiment';
export const AI_FOLLOW_UP_JOB = 'ai_follow_up';
export const AI_INACTIVITY_JOB = 'ai_inactivity';
export const AI_MANUAL_CONTROL_JOB = 'ai_manual_control';

/**
 * A timer found its conversation not yet due (a message or an activation came after it was
 * scheduled): the job ends and the conversation's next one is due `seconds` from now, in one commit;
 * one that a newer cause scheduled meanwhile is left as it is. A timer's due time is a hint: what it
 * does is decided from the conversation when it runs.
 */
export async function dueAgainIn(db: Db, job: OutboxJob, kind: OnePerRefKind, seconds: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await outboxRepository.complete(trx, job);
    await scheduleJobs(
      trx,
      kind,
      [{ businessId: job.business_id, refId: job.ref_id, delaySeconds: seconds }],
      'existing',
    );
  });
}

/** Ends a timer's run that sends or writes nothing, with its job, in one commit. */
export async function endRun(
  db: Db,
  job: OutboxJob,
  run: AiRunRow,
  end: { status: Exclude<RunStatus, 'running'>; outcome: string; error?: string; reply_text?: string },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await aiRunsRepository.finish(trx, job.business_id, run.id, end);
    await outboxRepository.complete(trx, job);
  });
}

/** Tries of a follow-up or a sentiment analysis that fails (the model after its client's retries, the database). */
const recordedTries = repeatableTries(3);

/**
 * A follow-up's or a sentiment analysis's try that failed: tried again on the outbox's schedule for
 * repeatable work; past its tries, its running record ends failed, since no customer waits for it.
 */
export async function afterRecordedTimerFailure(
  db: Db,
  job: OutboxJob,
  kind: 'follow_up' | 'sentiment',
  err: unknown,
): Promise<JobOutcome> {
  const outcome = recordedTries.afterFailure(job, true, (err as Error).message);
  if ('failed' in outcome) await aiTimersRepository.failRunning(db, job.business_id, job.ref_id, kind, outcome.failed);
  return outcome;
}

/** A follow-up or a sentiment analysis whose worker stopped runs again: its record keeps it from acting twice. */
export const onRecordedTimerAbandoned = (job: OutboxJob) => recordedTries.onAbandoned(job);
