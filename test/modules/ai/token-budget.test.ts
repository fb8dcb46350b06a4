import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant } from '../../helpers/tenants.ts';
import {
  aiApp,
  aiBusiness,
  eventsOf,
  runsOf,
  waitForReplies,
  waitUntil,
  type AiApp,
  type AiFixture,
} from './ai-helpers.ts';
import { conversationRow, isSentimentRequest, operate } from './timer-helpers.ts';

// One app for the file, with a service budget of 300 tokens a day; each test makes a business of its own.
let base: AiApp;
beforeAll(async () => {
  base = await aiApp({ env: { AI_DAILY_TOKEN_BUDGET: '300' } });
}, 60_000);
afterAll(() => base.close());

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

/** The operator's change of a business; answers the response. */
function patchBusiness(fixture: AiFixture, businessId: string, payload: unknown) {
  return fixture.app.app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${businessId}`,
    headers: adminHeaders,
    payload: payload as Record<string, unknown>,
  });
}

describe("the business's daily token budget", () => {
  it('past it a run calls no model, says so, and hands the conversation to a person with the fallback message', async () => {
    f = await aiBusiness(base, { agent: { prompt_config: { fallback_message: 'Te paso con una persona.' } } });
    // The first reply's call takes more than the day's 300 tokens.
    f.llm.scriptFor('Hola', { text: 'Claro, te ayudo.', usage: { prompt_tokens: 290, completion_tokens: 20 } });
    await f.inbound('Hola');
    await waitForReplies(f, 1);
    await f.inbound('¿Y el envío?');
    await waitForReplies(f, 2);
    expect(f.repliesTo()).toEqual(['Claro, te ayudo.', 'Te paso con una persona.']);
    expect(f.llm.requests).toHaveLength(1);
    const conversationId = await f.conversationOf();
    const [run] = await runsOf(f, conversationId);
    expect(run).toMatchObject({
      kind: 'reply',
      status: 'handed_over',
      outcome: 'budget_exhausted',
      model_calls: [],
      bot_status: 'bot_end',
      reply_text: 'Te paso con una persona.',
      error: "the business's daily token budget is used up",
    });
    expect((await eventsOf(f, conversationId)).map((e) => [e.type, e.actor_type])).toEqual([
      ['agent_assigned', 'system'],
      ['manual_control_activated', 'ai_agent'],
      ['alert_triggered', 'ai_agent'],
    ]);
    expect((await conversationRow(f, conversationId)).manual_control).toBe(true);

    // A sentiment past the budget is not asked for either.
    await operate(f, conversationId, 'resolve', {});
    const sentimentEnded = async () =>
      (await runsOf(f!, conversationId)).some((r) => r.kind === 'sentiment' && r.status !== 'running');
    await waitUntil(sentimentEnded);
    const sentiment = (await runsOf(f, conversationId)).find((r) => r.kind === 'sentiment')!;
    expect(sentiment).toMatchObject({ status: 'skipped', outcome: 'budget_exhausted', model_calls: [] });
    expect(f.llm.requests.filter(isSentimentRequest)).toEqual([]);

    // The business's own budget wins over the service's: 0 lifts the bound.
    const lifted = await patchBusiness(f, f.tenant.businessId, { ai_daily_token_budget: 0 });
    expect(lifted.statusCode).toBe(200);
    expect(lifted.json().business).toMatchObject({ id: f.tenant.businessId, ai_daily_token_budget: 0 });
    await operate(f, conversationId, 'manual-control', { active: false });
    await f.inbound('¿Sigue ahí?');
    await waitForReplies(f, 3);
    expect(f.repliesTo()[2]).toBe('Reply to: ¿Sigue ahí?');

    // Back to the service's default (null), and then a budget of its own that is used up already.
    const reset = await patchBusiness(f, f.tenant.businessId, { ai_daily_token_budget: null });
    expect(reset.json().business.ai_daily_token_budget).toBeNull();
    const own = await patchBusiness(f, f.tenant.businessId, { ai_daily_token_budget: 100_000_000 });
    expect(own.json().business.ai_daily_token_budget).toBe(100_000_000);
    const read = await f.app.app.inject({ url: `/admin/v1/businesses/${f.tenant.businessId}`, headers: adminHeaders });
    expect(read.json().business.ai_daily_token_budget).toBe(100_000_000);
  });

  it("the operator's change of a business refuses bad input and unknown businesses", async () => {
    f = await aiBusiness(base);
    const other = await createTenant(f.app.app, 'Other');
    for (const body of [
      {},
      { ai_daily_token_budget: -1 },
      { ai_daily_token_budget: 1.5 },
      { ai_daily_token_budget: '100' },
      { ai_daily_token_budget: 10, plan: 'gold' },
      { name: '' },
    ]) {
      const res = await patchBusiness(f, f.tenant.businessId, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const unknown = await patchBusiness(f, '0190c6e6-1f5e-7cc4-9a3c-4d8bd2d3e9aa', { ai_daily_token_budget: 5 });
    expect(unknown.statusCode).toBe(404);
    const badId = await patchBusiness(f, 'nope', { ai_daily_token_budget: 5 });
    expect(badId.statusCode).toBe(400);
    // Each business keeps its own setting.
    await patchBusiness(f, other.businessId, { ai_daily_token_budget: 7, name: 'Other Inc' });
    const mine = await f.app.app.inject({ url: `/admin/v1/businesses/${f.tenant.businessId}`, headers: adminHeaders });
    expect(mine.json().business).toMatchObject({ name: 'Acme', ai_daily_token_budget: null });
    const theirs = await f.app.app.inject({ url: `/admin/v1/businesses/${other.businessId}`, headers: adminHeaders });
    expect(theirs.json().business).toMatchObject({ name: 'Other Inc', ai_daily_token_budget: 7 });
    const unauthorised = await f.app.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${f.tenant.businessId}`,
      payload: { ai_daily_token_budget: 5 },
    });
    expect(unauthorised.statusCode).toBe(401);
  });
});
