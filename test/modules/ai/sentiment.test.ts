import { afterEach, describe, expect, it } from 'vitest';
import { parseSentiment } from '../../../src/modules/ai/sentiment.job.ts';
import { aiFixture, runsOf, settle, waitForReplies, waitUntil, type AiFixture } from './ai-helpers.ts';
import { answerSentiments, eventsOfType, isSentimentRequest, operate } from './timer-helpers.ts';

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

const sentimentRequests = (fixture: AiFixture) => fixture.llm.requests.filter(isSentimentRequest);

describe('parseSentiment', () => {
  it('reads one of the three values in any case and with punctuation, and nothing else', () => {
    expect(parseSentiment(' positive.')).toBe('POSITIVE');
    expect(parseSentiment('NEUTRAL')).toBe('NEUTRAL');
    expect(parseSentiment('"Negative"\n')).toBe('NEGATIVE');
    for (const text of ['', 'MIXED', 'POSITIVE or NEGATIVE', 'muy bien']) expect(parseSentiment(text)).toBeNull();
  });
});

describe("a conversation's sentiment", () => {
  it('is analysed once a conversation is resolved, each value as the model answers it, once per newest message', async () => {
    f = await aiFixture();
    const fixture = f;
    answerSentiments(f, (transcript) => {
      const said = transcript.find((m) => m.from === 'customer')!.text;
      return said.includes('feliz') ? 'POSITIVE' : said.includes('furioso') ? 'Negative.' : 'NEUTRAL';
    });
    const customers = { '34600000001': 'Estoy feliz', '34600000002': 'Ni fu ni fa', '34600000003': 'Estoy furioso' };
    for (const [phone, text] of Object.entries(customers)) await f.inbound(text, phone);
    const noAgent = '34600000004';
    await f.inbound('Sin agente', noAgent);
    for (const phone of [...Object.keys(customers), noAgent]) await waitForReplies(f, 1, phone);
    const ids = await Promise.all(Object.keys(customers).map((phone) => fixture.conversationOf(phone)));
    const withoutAgent = await f.conversationOf(noAgent);
    await operate(f, withoutAgent, 'agent', { agent_id: null }, 'PUT');

    for (const id of [...ids, withoutAgent]) await operate(f, id, 'resolve', { reason: 'done' });
    await waitUntil(async () => {
      const found = await Promise.all(ids.map((id) => eventsOfType(fixture, id, 'sentiment_analyzed')));
      return found.every((events) => events.length === 1);
    });
    const analysed = await Promise.all(ids.map((id) => eventsOfType(fixture, id, 'sentiment_analyzed')));
    expect(analysed.map(([e]) => [e.data, e.actor_type, e.agent_id])).toEqual([
      [{ sentiment: 'POSITIVE' }, 'ai_agent', f.agentId],
      [{ sentiment: 'NEUTRAL' }, 'ai_agent', f.agentId],
      [{ sentiment: 'NEGATIVE' }, 'ai_agent', f.agentId],
    ]);
    const [sentimentRun] = (await runsOf(f, ids[2])).filter((r) => r.kind === 'sentiment');
    expect(sentimentRun).toMatchObject({ status: 'analyzed', outcome: 'NEGATIVE', agent_id: f.agentId });
    expect(sentimentRun.model_calls).toEqual([
      { model: 'gpt-4o-mini', tokens_in: expect.any(Number), tokens_out: 7, latency_ms: expect.any(Number) },
    ]);
    // The classification reads the conversation as data, with a short answer asked for.
    const [request] = sentimentRequests(f).filter((r) => r.body.messages![1].content!.includes('furioso'));
    expect(request.body).toMatchObject({ max_tokens: 5, temperature: 0 });
    expect(JSON.parse(request.body.messages![1].content!)).toEqual([
      { from: 'customer', text: 'Estoy furioso' },
      { from: 'business', text: 'Reply to: Estoy furioso' },
    ]);

    // Resolved again with no new message: the same messages are not analysed again.
    await operate(f, ids[0], 'resolve', {});
    await settle(1000);
    expect(await eventsOfType(f, ids[0], 'sentiment_analyzed')).toHaveLength(1);
    expect(sentimentRequests(f)).toHaveLength(3);
    // A conversation without an agent is not analysed.
    expect(await eventsOfType(f, withoutAgent, 'sentiment_analyzed')).toEqual([]);
    expect(sentimentRequests(f).some((r) => r.body.messages![1].content!.includes('Sin agente'))).toBe(false);
  });

  it('is not analysed without a model', async () => {
    f = await aiFixture({ llm: false, env: { AI_SENTIMENT_QUIET_MINUTES: '0.01' } });
    await f.inbound('Hola');
    const conversationId = await f.conversationOf();
    await operate(f, conversationId, 'resolve', {});
    await settle(1000);
    const jobs = await f.app.database.db.selectFrom('outbox').select('id').where('kind', '=', 'ai_sentiment').execute();
    expect(jobs).toEqual([]);
    expect(await runsOf(f, conversationId)).toEqual([]);
  });
});
