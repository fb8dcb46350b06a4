import { afterEach, describe, expect, it } from 'vitest';
import { aiFixture, runsOf, settle, waitForReplies, waitUntil, type AiFixture } from './ai-helpers.ts';
import { answerSentiments, eventsOfType, isSentimentRequest } from './timer-helpers.ts';

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

const sentimentRequests = (fixture: AiFixture) => fixture.llm.requests.filter(isSentimentRequest);

describe("a conversation's sentiment", () => {
  it('is analysed after a quiet period; an answer outside the three values is asked again, bounded, and never stored', async () => {
    f = await aiFixture({ env: { AI_SENTIMENT_QUIET_MINUTES: '0.03' } });
    const invalid = ['Muy bien', 'MIXED', 'probably positive'];
    let asked = 0;
    // The first quiet period gets only answers outside the three values; the second, a sentiment.
    answerSentiments(f, (transcript) =>
      transcript.some((m) => m.text === 'Sigo esperando mi pedido') ? 'NEGATIVE' : invalid[asked++ % 3],
    );
    await f.inbound('Hola');
    await waitForReplies(f, 1);
    const conversationId = await f.conversationOf();
    const sentimentRuns = async () => (await runsOf(f!, conversationId)).filter((r) => r.kind === 'sentiment');
    await waitUntil(async () => (await sentimentRuns()).some((r) => r.status === 'failed'));
    const [failed] = await sentimentRuns();
    expect(failed).toMatchObject({ status: 'failed', outcome: 'invalid_answer' });
    expect(failed.model_calls).toHaveLength(3);
    for (const call of failed.model_calls) expect(call.error).toBe('not one of POSITIVE, NEUTRAL, NEGATIVE');
    expect(JSON.stringify(failed)).not.toContain('MIXED');
    expect(await eventsOfType(f, conversationId, 'sentiment_analyzed')).toEqual([]);

    // A new message starts a new quiet period, analysed once.
    await f.inbound('Sigo esperando mi pedido');
    await waitForReplies(f, 2);
    await waitUntil(async () => (await eventsOfType(f!, conversationId, 'sentiment_analyzed')).length === 1);
    await settle(2000);
    expect((await eventsOfType(f, conversationId, 'sentiment_analyzed')).map((e) => e.data)).toEqual([
      { sentiment: 'NEGATIVE' },
    ]);
    const runs = await sentimentRuns();
    expect(runs[0]).toMatchObject({ status: 'analyzed', outcome: 'NEGATIVE' });
    expect(runs[0].model_calls).toHaveLength(1);
    // Each earlier quiet period (one, unless the reply came after its first) failed with three answers.
    for (const run of runs.slice(1)) expect(run).toMatchObject({ status: 'failed', outcome: 'invalid_answer' });
    expect(sentimentRequests(f)).toHaveLength(1 + 3 * (runs.length - 1));
  });
});
