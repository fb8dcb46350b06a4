import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { AiRunJobHandler } from '../../../src/modules/ai/ai-run.job.ts';
import { openAiChatModel } from '../../../src/modules/ai/llm-client.ts';
import { claimJob, crashTestApp, runsOf, settle, waitForReplies, waitUntil, type AiFixture } from './ai-helpers.ts';

// Each test makes a business of its own over the file's app, restarted after it as a crashed process would be.
const business = crashTestApp();
let f: AiFixture | undefined;

const silent = { error: () => undefined };

/** The run job of a process that dies where the reply would be written: nothing of the send is committed. */
function dyingHandler(fixture: AiFixture) {
  const real = fixture.app.app.services.replies;
  return new AiRunJobHandler({
    db: fixture.app.database.db,
    model: openAiChatModel(fixture.app.config.llm!),
    replies: {
      agentReplyPlan: (...args) => real.agentReplyPlan(...args),
      lockAgentReply: async () => {
        throw new Error('the process stopped');
      },
      acceptAgentReply: (...args) => real.acceptAgentReply(...args),
      afterAgentReplies: () => real.afterAgentReplies(),
    },
    contacts: fixture.app.app.services.contacts,
    log: silent,
  });
}

describe('a run whose process stops', () => {
  it('stopped after the model answered, before the reply was accepted: the next process runs it again and replies once', async () => {
    f = await business();
    await f.inbound('¿Tienen envío a Valparaíso?');
    const job = await claimJob(f, 'ai_run');
    await dyingHandler(f).handle(job);
    expect(f.llm.requests).toHaveLength(1);
    const conversationId = await f.conversationOf();
    const [left] = await runsOf(f, conversationId);
    expect(left).toMatchObject({ status: 'running', attempts: 1, reply_message_id: null });
    expect(left.model_calls).toHaveLength(1);
    await f.app.close();

    await f.restart();
    const replies = await waitForReplies(f, 1, undefined, 15_000);
    await settle(500);
    expect(replies).toEqual(['Reply to: ¿Tienen envío a Valparaíso?']);
    expect(f.repliesTo()).toHaveLength(1);
    expect(f.llm.requests).toHaveLength(2);
    const runs = await runsOf(f, conversationId);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'replied', attempts: 2 });
    expect(runs[0].model_calls).toHaveLength(2);
  });

  it('stopped while a newer message waited: the newer run answers both, once, and the stopped one is superseded', async () => {
    f = await business();
    await f.inbound('Primero');
    const job = await claimJob(f, 'ai_run');
    await dyingHandler(f).handle(job);
    await f.inbound('Segundo');
    await f.app.close();

    await f.restart();
    await waitForReplies(f, 1, undefined, 15_000);
    await settle(500);
    expect(f.repliesTo()).toEqual(['Reply to: Segundo']);
    const runs = await runsOf(f, await f.conversationOf());
    expect(runs.map((r) => r.status)).toEqual(['replied', 'superseded']);
    expect(runs[0].input_message_ids).toHaveLength(2);
    // The stopped job ends too once taken over (at the start on the embedded engine; on PostgreSQL,
    // at a sweep after its lease ran out), given up to the newer one.
    await waitUntil(async () => {
      const jobs = await f!.app.database.db
        .selectFrom('outbox')
        .select('state')
        .where('business_id', '=', f!.tenant.businessId)
        .where('kind', '=', 'ai_run')
        .execute();
      return jobs.every((j) => j.state === 'done' || j.state === 'failed');
    }, 15_000);
    expect(f.repliesTo()).toHaveLength(1);
  });

  it('run again after its reply was accepted: the run finds its reply and sends nothing more', async () => {
    f = await business();
    await f.inbound('Hola');
    const job = await claimJob(f, 'ai_run');
    const handler = f.app.app.services.aiRuns.runJobHandler(silent);
    expect(await handler.handle(job)).toEqual({ done: true, recorded: true });
    const conversationId = await f.conversationOf();
    const [run] = await runsOf(f, conversationId);
    expect(run.status).toBe('replied');
    // As if the process had stopped before the job's end was kept: the job runs again.
    await sql`update outbox set state = 'running', locked_until = now() - interval '1 second'
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
    await waitForReplies(f, 1);
    await settle(500);
    expect(f.repliesTo()).toEqual(['Reply to: Hola']);
    expect(f.llm.requests).toHaveLength(1);
    const messages = await f.app.database.db
      .selectFrom('messages')
      .select('id')
      .where('conversation_id', '=', conversationId)
      .where('sender_type', '=', 'ai_agent')
      .execute();
    expect(messages).toEqual([{ id: run.reply_message_id }]);
  });
});
