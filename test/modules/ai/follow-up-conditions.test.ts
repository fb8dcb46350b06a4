import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { aiApp, aiBusiness, runsOf, settle, waitForReplies, type AiApp, type AiFixture } from './ai-helpers.ts';
import { agentTexts, isFollowUpRequest, operate } from './timer-helpers.ts';

// One app for the file; each test makes a business (channel, agent) of its own.
let base: AiApp;
beforeAll(async () => {
  base = await aiApp();
}, 60_000);
afterAll(() => base.close());

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

const CHECK_IN = '¿Sigues ahí? Si necesitas algo más, escríbeme.';

describe("follow-ups after the customer's silence", () => {
  it('without a message the model writes it from the conversation', async () => {
    f = await aiBusiness(base, { agent: { follow_up_settings: { enabled: true, after_minutes: 0.02 } } });
    const reply = f.llm.reply;
    f.llm.reply = (request) => (isFollowUpRequest(request) ? { text: '¿Pudiste elegir la talla?' } : reply(request));
    await f.inbound('¿Tienen talla M?');
    await waitForReplies(f, 2);
    await settle(1500);
    expect(f.repliesTo()).toEqual(['Reply to: ¿Tienen talla M?', '¿Pudiste elegir la talla?']);
    const request = f.llm.requests.find(isFollowUpRequest)!;
    expect(request.body.messages!.slice(1, -1).map((m) => [m.role, m.content])).toEqual([
      ['user', '¿Tienen talla M?'],
      ['assistant', 'Reply to: ¿Tienen talla M?'],
    ]);
    const [run] = (await runsOf(f, await f.conversationOf())).filter((r) => r.kind === 'follow_up');
    expect(run).toMatchObject({ status: 'replied', reply_text: '¿Pudiste elegir la talla?' });
    expect(run.model_calls).toHaveLength(1);
  });

  it('are not sent under manual control, once the agent changed, or after the conversation closed', async () => {
    f = await aiBusiness(base, {
      agent: { follow_up_settings: { enabled: true, after_minutes: 0.03, message: CHECK_IN } },
    });
    const [manual, removed, closed] = ['34600000011', '34600000012', '34600000013'];
    const operations: [string, string, Record<string, unknown>, ('POST' | 'PUT')?][] = [
      [manual, 'manual-control', { active: true }],
      [removed, 'agent', { agent_id: null }, 'PUT'],
      [closed, 'archive', {}],
    ];
    // Each taken as soon as the agent replied, well within the silence a follow-up waits for.
    for (const [phone, operation, payload, method] of operations) {
      await f.inbound('Hola', phone);
      await waitForReplies(f, 1, phone);
      await operate(f, await f.conversationOf(phone), operation, payload, method);
    }
    await settle(2500);
    for (const phone of [manual, removed, closed]) {
      expect(f.repliesTo(phone)).toEqual(['Reply to: Hola']);
      expect(await agentTexts(f, await f.conversationOf(phone))).toEqual(['Reply to: Hola']);
    }
  });
});
