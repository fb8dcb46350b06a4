import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { AiRunJobHandler } from '../../../src/modules/ai/ai-run.job.ts';
import { openAiChatModel } from '../../../src/modules/ai/llm-client.ts';
import {
  claimJob,
  crashTestApp,
  endedRun,
  eventsOf,
  runsOf,
  settle,
  waitForReplies,
  waitUntil,
  type AiFixture,
} from './ai-helpers.ts';

// Each test makes a business of its own over the file's app, restarted after it as a crashed process would be.
const business = crashTestApp();
let f: AiFixture | undefined;

/** The run job of a process that stops right after a tool's commit, before anything else. */
function stoppingAfterTool(fixture: AiFixture) {
  const { replies, contacts } = fixture.app.app.services;
  return new AiRunJobHandler({
    db: fixture.app.database.db,
    model: openAiChatModel(fixture.app.config.llm!),
    replies: {
      agentReplyPlan: (...args) => replies.agentReplyPlan(...args),
      lockAgentReply: (...args) => replies.lockAgentReply(...args),
      acceptAgentReply: (...args) => replies.acceptAgentReply(...args),
      afterAgentReplies: async () => {
        throw new Error('the process stopped');
      },
    },
    contacts,
    log: { error: () => undefined },
  });
}

const contactEvents = async (fixture: AiFixture) => {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from events
    where business_id = ${fixture.tenant.businessId} and type = 'contact_field_changed'`.execute(
    fixture.app.database.db,
  );
  return rows[0].n;
};

describe('a run that stops in the middle of its tool calls', () => {
  it("after update_contact's commit: taken up again, it acts once and replies once, from the recorded result", async () => {
    f = await business({ agent: { tools: { update_contact: { enabled: true, fields: ['name'] } } } });
    const call = { name: 'update_contact', arguments: { fields: { name: 'Ana Gómez' } } };
    f.llm.scriptFor('Me llamo Ana Gómez', { toolCalls: [call] });
    await f.inbound('Me llamo Ana Gómez');
    await stoppingAfterTool(f).handle(await claimJob(f, 'ai_run'));
    const conversationId = await f.conversationOf();
    const [left] = await runsOf(f, conversationId);
    expect(left).toMatchObject({ status: 'running', attempts: 1 });
    expect(left.tool_calls).toMatchObject([{ name: 'update_contact', result: { updated: ['name'] } }]);
    expect(await contactEvents(f)).toBe(1);
    await f.app.close();

    // The model of the next process repeats the call, then answers.
    f.llm.scriptFor('Me llamo Ana Gómez', { toolCalls: [call] }, { text: 'Gracias, Ana.' });
    await f.restart();
    const run = await endedRun(f, conversationId, 15_000);
    expect(await waitForReplies(f, 1)).toEqual(['Gracias, Ana.']);
    await settle(300);
    expect(f.repliesTo()).toHaveLength(1);
    expect(run).toMatchObject({ status: 'replied', attempts: 2 });
    // The recorded call was replayed to the model; its repetition answered the recorded result.
    const replay = f.llm.requests[1].body.messages!.slice(-2);
    expect(replay[0].tool_calls?.map((c) => c.function.name)).toEqual(['update_contact']);
    expect(JSON.parse(replay[1].content!)).toEqual({ result: { updated: ['name'] } });
    expect(run.tool_calls.map((c: { result: unknown }) => c.result)).toEqual([
      { updated: ['name'] },
      { updated: ['name'] },
    ]);
    expect(await contactEvents(f)).toBe(1);
  });

  it("after human_handoff's commit: the run has ended, and nothing more is sent or asked", async () => {
    f = await business({ agent: { tools: { human_handoff: { enabled: true } } } });
    f.llm.scriptFor('Una persona, por favor', {
      toolCalls: [{ name: 'human_handoff', arguments: { reason: 'pide una persona', message: 'Ya viene alguien.' } }],
    });
    await f.inbound('Una persona, por favor');
    await stoppingAfterTool(f).handle(await claimJob(f, 'ai_run'));
    await f.app.close();

    await f.restart();
    const conversationId = await f.conversationOf();
    expect(await waitForReplies(f, 1, undefined, 15_000)).toEqual(['Ya viene alguien.']);
    await waitUntil(async () => {
      const jobs = await f!.app.database.db
        .selectFrom('outbox')
        .select('state')
        .where('business_id', '=', f!.tenant.businessId)
        .where('kind', '=', 'ai_run')
        .execute();
      return jobs.every((j) => j.state === 'done');
    }, 15_000);
    await settle(300);
    expect(f.repliesTo()).toHaveLength(1);
    expect(f.llm.requests).toHaveLength(1);
    const runs = await runsOf(f, conversationId);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'handed_over', attempts: 1 });
    expect((await eventsOf(f, conversationId)).map((e) => e.type)).toEqual([
      'agent_assigned',
      'manual_control_activated',
      'alert_triggered',
    ]);
  });
});
