import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { FollowUpJobHandler } from '../../../src/modules/ai/follow-up.job.ts';
import { openAiChatModel } from '../../../src/modules/ai/llm-client.ts';
import { claimJob, crashTestApp, runsOf, settle, waitForReplies, waitUntil, type AiFixture } from './ai-helpers.ts';
import { conversationRow, eventsOfType, isFollowUpRequest, operate } from './timer-helpers.ts';

// Each test makes a business of its own over the file's app, restarted after it as a crashed process would be.
const business = crashTestApp();
let f: AiFixture | undefined;

const silent = { error: () => undefined };

/** The process's timer handler of `kind`. */
function timerHandler(fixture: AiFixture, kind: string) {
  return fixture.app.app.services.aiTimers.jobHandlers().find((h) => h.kind === kind)!;
}

describe('a timer job whose process stops', () => {
  it('a follow-up stopped after the model wrote it, before it was accepted: the next process sends it once', async () => {
    f = await business({ agent: { follow_up_settings: { enabled: true, after_minutes: 0.02 } } });
    const reply = f.llm.reply;
    f.llm.reply = (request) => (isFollowUpRequest(request) ? { text: '¿Te ayudo con algo más?' } : reply(request));
    await f.inbound('Hola');
    expect(await f.app.app.services.aiRuns.runJobHandler(silent).handle(await claimJob(f, 'ai_run', 60))).toEqual({
      done: true,
      recorded: true,
    });
    // The reply scheduled the follow-up; a process that dies where the follow-up would be written takes it.
    const real = f.app.app.services.replies;
    const dying = new FollowUpJobHandler({
      db: f.app.database.db,
      model: openAiChatModel(f.app.config.llm!),
      budget: { exhausted: async () => false },
      replies: {
        agentReplyPlan: (...args) => real.agentReplyPlan(...args),
        lockAgentReply: async () => {
          throw new Error('the process stopped');
        },
        acceptAgentReply: (...args) => real.acceptAgentReply(...args),
        afterAgentReplies: () => real.afterAgentReplies(),
      },
    });
    await dying.handle(await claimJob(f, 'ai_follow_up'));
    const conversationId = await f.conversationOf();
    const [left] = (await runsOf(f, conversationId)).filter((r) => r.kind === 'follow_up');
    expect(left).toMatchObject({ status: 'running', attempts: 1, reply_message_id: null });
    expect(left.model_calls).toHaveLength(1);
    await f.app.close();

    await f.restart();
    await waitForReplies(f, 2, undefined, 15_000);
    await settle(1500);
    expect(f.repliesTo()).toEqual(['Reply to: Hola', '¿Te ayudo con algo más?']);
    const runs = (await runsOf(f, conversationId)).filter((r) => r.kind === 'follow_up');
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'replied', attempts: 2, reply_text: '¿Te ayudo con algo más?' });
    expect(runs[0].model_calls).toHaveLength(2);
  });

  it('a manual-control timer waits through a restart, and run again after it released, it releases once', async () => {
    f = await business({ agent: { inactivity_run_settings: { manual_control_release_minutes: 0.02 } } });
    await f.inbound('Hola');
    const conversationId = await f.conversationOf();
    await operate(f, conversationId, 'manual-control', { active: true });
    // Stopped before the timer was due: the next process finds it.
    await f.app.close();
    await f.restart({ workers: false });

    const job = await claimJob(f, 'ai_manual_control', 60);
    expect(await timerHandler(f, 'ai_manual_control').handle(job)).toEqual({ done: true });
    expect((await conversationRow(f, conversationId)).manual_control).toBe(false);
    // As if the process had stopped before the job's end was kept: the job runs again.
    await sql`update outbox set locked_until = now() - interval '1 second'
      where business_id = ${f.tenant.businessId} and id = ${job.id}`.execute(f.app.database.db);
    await f.app.close();

    await f.restart();
    await waitUntil(async () => {
      const row = await f!.app.database.db
        .selectFrom('outbox')
        .select('state')
        .where('id', '=', job.id)
        .executeTakeFirstOrThrow();
      return row.state === 'done';
    }, 15_000);
    expect(await eventsOfType(f, conversationId, 'manual_control_released')).toEqual([
      { actor_type: 'system', agent_id: f.agentId, data: { reason: 'timer' } },
    ]);
  });
});
