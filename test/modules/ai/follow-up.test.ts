import { afterEach, describe, expect, it } from 'vitest';
import { aiFixture, runsOf, settle, waitForReplies, type AiFixture } from './ai-helpers.ts';

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

const CHECK_IN = '¿Sigues ahí? Si necesitas algo más, escríbeme.';

describe("follow-ups after the customer's silence", () => {
  it('sends the fixed message as the agent after the silence, at most max_follow_ups times; a message from the customer starts again', async () => {
    f = await aiFixture({
      agent: { follow_up_settings: { enabled: true, after_minutes: 0.02, max_follow_ups: 2, message: CHECK_IN } },
    });
    await f.inbound('¿Tienen talla M?');
    await waitForReplies(f, 3);
    await settle(2000);
    expect(f.repliesTo()).toEqual(['Reply to: ¿Tienen talla M?', CHECK_IN, CHECK_IN]);
    const conversationId = await f.conversationOf();
    const runs = (await runsOf(f, conversationId)).filter((r) => r.kind === 'follow_up');
    expect(runs.map((r) => [r.status, r.outcome, r.reply_text, r.bot_status])).toEqual([
      ['replied', 'follow_up', CHECK_IN, null],
      ['replied', 'follow_up', CHECK_IN, null],
    ]);
    // Each follows the agent's newest message, in the silence after the customer's message.
    const [reply] = (await runsOf(f, conversationId)).filter((r) => r.kind === 'reply');
    expect(runs[1].trigger_message_id).toBe(reply.reply_message_id);
    expect(runs[0].trigger_message_id).toBe(runs[1].reply_message_id);
    expect(runs[0].input_message_ids).toEqual([reply.trigger_message_id]);
    const sent = await f.app.database.db
      .selectFrom('messages')
      .select(['sender_type', 'agent_id'])
      .where('id', '=', runs[0].reply_message_id)
      .executeTakeFirstOrThrow();
    expect(sent).toEqual({ sender_type: 'ai_agent', agent_id: f.agentId });
    expect(f.llm.requests).toHaveLength(1);

    await f.inbound('Perdón, ¿y en azul?');
    await waitForReplies(f, 5);
    expect(f.repliesTo().slice(3)).toEqual(['Reply to: Perdón, ¿y en azul?', CHECK_IN]);
  });
});
