import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiFixture, settle, waitForReplies, waitUntil, type AiFixture } from './ai-helpers.ts';
import { answerSentiments, conversationRow, eventsOfType } from './timer-helpers.ts';

let f: AiFixture;
// One app for the file, each test with customers of its own.
beforeAll(async () => {
  f = await aiFixture();
  answerSentiments(f, () => 'NEUTRAL');
});
afterAll(() => f.close());

/** Changes the agent's inactivity_run_settings (merged); answers them as stored. */
async function inactivity(settings: Record<string, unknown>) {
  const res = await f.app.app.inject({
    method: 'PATCH',
    url: `/external/v2/agents/${f.agentId}`,
    headers: f.tenant.headers,
    payload: { agent: { inactivity_run_settings: settings } },
  });
  expect(res.statusCode).toBe(200);
  return res.json().agent.inactivity_run_settings as Record<string, unknown>;
}

describe('a conversation gone quiet', () => {
  it("is resolved, then archived once the agent's action says so, by the system for the agent, once per quiet period", async () => {
    await inactivity({ enabled: true, after_minutes: 0.02, action: 'resolve' });
    await f.inbound('Hola', '34600000021');
    await waitForReplies(f, 1, '34600000021');
    const resolvedId = await f.conversationOf('34600000021');
    await waitUntil(async () => (await eventsOfType(f, resolvedId, 'conversation_resolved')).length > 0);
    await settle(1000);
    expect(await eventsOfType(f, resolvedId, 'conversation_resolved')).toEqual([
      { actor_type: 'system', agent_id: f.agentId, data: { reason: 'inactivity' } },
    ]);
    expect((await conversationRow(f, resolvedId)).closed_at).toBeNull();
    // The resolution asks for the conversation's sentiment.
    await waitUntil(async () => (await eventsOfType(f, resolvedId, 'sentiment_analyzed')).length === 1);

    expect(await inactivity({ action: 'archive' })).toEqual({
      enabled: true,
      after_minutes: 0.02,
      action: 'archive',
    });
    await f.inbound('Hola', '34600000022');
    await waitForReplies(f, 1, '34600000022');
    const archivedId = await f.conversationOf('34600000022');
    await waitUntil(async () => (await conversationRow(f, archivedId)).closed_at !== null);
    await settle(1000);
    expect(await eventsOfType(f, archivedId, 'conversation_archived')).toEqual([
      { actor_type: 'system', agent_id: f.agentId, data: { origin: 'timer' } },
    ]);
    expect(await eventsOfType(f, archivedId, 'conversation_resolved')).toEqual([]);
  });

  it('waits for the last message, and does nothing when the settings are off', async () => {
    await inactivity({ enabled: true, after_minutes: 0.05, action: 'archive' });
    const customer = '34600000024';
    await f.inbound('Hola', customer);
    await waitForReplies(f, 1, customer);
    const conversationId = await f.conversationOf(customer);
    // A message within the quiet period (3 s) pushes it later: 2 s after the second reply, 4 s after the first.
    await settle(2000);
    await f.inbound('¿Sigues?', customer);
    await waitForReplies(f, 2, customer);
    await settle(2000);
    expect((await conversationRow(f, conversationId)).closed_at).toBeNull();
    await waitUntil(async () => (await conversationRow(f, conversationId)).closed_at !== null);

    await inactivity({ enabled: false, after_minutes: 0.02 });
    await f.inbound('Hola', '34600000023');
    await waitForReplies(f, 1, '34600000023');
    await settle(2200);
    const quiet = await f.conversationOf('34600000023');
    expect((await conversationRow(f, quiet)).closed_at).toBeNull();
    expect(await eventsOfType(f, quiet, 'conversation_archived')).toEqual([]);
  });
});
