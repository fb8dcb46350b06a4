import type { FastifyInstance } from 'fastify';
import type { Db } from '../../../src/db/database.ts';
import { newId } from '../../../src/lib/ids.ts';
import { adminHeaders } from '../../helpers/tenants.ts';

/** An exported event of a conversation, written straight into the table as its writer would. */
export async function insertEvent(
  db: Db,
  businessId: string,
  conversation: { id: string; contact_id: string; channel: string },
  event: {
    type: string;
    created_at: string;
    actor_type?: 'ai_agent' | 'human' | 'api' | 'system';
    user_id?: string | null;
    agent_id?: string | null;
    data?: Record<string, unknown>;
  },
) {
  await db
    .insertInto('events')
    .values({
      business_id: businessId,
      id: newId(),
      conversation_id: conversation.id,
      contact_id: conversation.contact_id,
      channel: conversation.channel,
      actor_type: 'system',
      user_id: null,
      agent_id: null,
      data: {},
      ...event,
    })
    .execute();
}

/** An AI agent row (the reports read only its name). */
export async function insertAgent(db: Db, businessId: string, name: string) {
  const id = newId();
  await db
    .insertInto('agents')
    .values({
      business_id: businessId,
      id,
      name,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    })
    .execute();
  return id;
}

/** The follow-up run whose reply is `messageId`. */
export async function insertFollowUpRun(
  db: Db,
  businessId: string,
  conversationId: string,
  agentId: string,
  messageId: string,
) {
  await db
    .insertInto('ai_runs')
    .values({
      business_id: businessId,
      id: newId(),
      conversation_id: conversationId,
      agent_id: agentId,
      trigger_message_id: newId(),
      kind: 'follow_up',
      status: 'replied',
      model_calls: JSON.stringify([]),
      tool_calls: JSON.stringify([]),
      reply_message_id: messageId,
      created_at: new Date().toISOString(),
    } as never)
    .execute();
}

/** Sets the business's time zone through the operator API. */
export async function setTimeZone(app: FastifyInstance, businessId: string, timeZone: string) {
  const res = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${businessId}`,
    headers: adminHeaders,
    payload: { time_zone: timeZone },
  });
  if (res.statusCode !== 200) throw new Error(`time zone: ${res.body}`);
}

/** GET of a report through the operator API. */
export function getReport(app: FastifyInstance, businessId: string, report: string, query: string) {
  return app.inject({
    method: 'GET',
    url: `/admin/v1/businesses/${businessId}/reports/${report}?${query}`,
    headers: adminHeaders,
  });
}
