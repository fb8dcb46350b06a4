import { sql } from 'kysely';
import { SENTIMENT_INSTRUCTION } from '../../../src/modules/ai/sentiment.job.ts';
import type { ChatRequest, LlmAnswer } from '../../helpers/fake-llm-api.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import type { AiFixture } from './ai-helpers.ts';

/** Whether a request to the model is a sentiment's classification (its instruction comes first). */
export const isSentimentRequest = (request: ChatRequest) =>
  request.body.messages?.[0]?.content === SENTIMENT_INSTRUCTION;

/** Whether a request to the model asks for a follow-up (its instruction comes last). */
export const isFollowUpRequest = (request: ChatRequest) =>
  request.body.messages?.at(-1)?.content?.startsWith('The customer has not answered your last message') === true;

/**
 * The fake model's answers: a classification answered by `sentiment` (from the conversation it is
 * sent as JSON), any other request as the fake answers by default (`Reply to: <last customer text>`).
 */
export function answerSentiments(f: AiFixture, sentiment: (transcript: { from: string; text: string }[]) => string) {
  const reply = f.llm.reply;
  f.llm.reply = (request): LlmAnswer => {
    if (!isSentimentRequest(request)) return reply(request);
    return { text: sentiment(JSON.parse(request.body.messages![1].content!) as { from: string; text: string }[]) };
  };
}

/** An operator's operation on a conversation (`resolve`, `manual-control`, `agent`, ...); answers its status. */
export async function operate(
  f: AiFixture,
  conversationId: string,
  operation: string,
  payload: Record<string, unknown> = {},
  method: 'POST' | 'PUT' = 'POST',
) {
  const res = await f.app.app.inject({
    method,
    url: `/admin/v1/businesses/${f.tenant.businessId}/conversations/${conversationId}/${operation}`,
    headers: adminHeaders,
    payload,
  });
  if (res.statusCode !== 200) throw new Error(`${operation}: ${res.statusCode} ${res.body}`);
  return res.json().conversation as { manual_control: boolean; closed_at: string | null };
}

/** The conversation's exported events of `type`, oldest first. */
export async function eventsOfType(f: AiFixture, conversationId: string, type: string) {
  const { rows } = await sql<{
    actor_type: string;
    agent_id: string | null;
    data: Record<string, unknown>;
  }>`select actor_type, agent_id, data from events
    where business_id = ${f.tenant.businessId} and conversation_id = ${conversationId} and type = ${type}
    order by created_at, id`.execute(f.app.database.db);
  return rows;
}

/** The conversation's row as the timers change it. */
export function conversationRow(f: AiFixture, conversationId: string) {
  return f.app.database.db
    .selectFrom('conversations')
    .select(['manual_control', 'manual_control_locked', 'closed_at'])
    .where('business_id', '=', f.tenant.businessId)
    .where('id', '=', conversationId)
    .executeTakeFirstOrThrow();
}

/** The agent's messages in the conversation, oldest first (replies and follow-ups). */
export async function agentTexts(f: AiFixture, conversationId: string) {
  const rows = await f.app.database.db
    .selectFrom('messages')
    .select(['text'])
    .where('business_id', '=', f.tenant.businessId)
    .where('conversation_id', '=', conversationId)
    .where('sender_type', '=', 'ai_agent')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.text);
}
