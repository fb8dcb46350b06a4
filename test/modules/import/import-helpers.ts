import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { v7 } from 'uuid';
import { adminHeaders } from '../../helpers/tenants.ts';

/** POSTs an NDJSON body (text, records or a stream) to the import of a business. */
export function postImport(
  app: FastifyInstance,
  businessId: string,
  body: string | Readable | object[],
  headers: Record<string, string> = {},
) {
  const payload = Array.isArray(body) ? ndjson(body) : body;
  return app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/import`,
    headers: { ...adminHeaders, 'content-type': 'application/x-ndjson', ...headers },
    payload,
  });
}

export const ndjson = (records: object[]) => records.map((r) => JSON.stringify(r)).join('\n') + '\n';

/** A small linked set of records: a contact, a conversation, two messages and an event. */
export function sampleRecords(suffix = '') {
  const contactId = v7();
  const conversationId = v7();
  const messageIds = [v7(), v7()];
  const eventId = v7();
  const records = [
    {
      type: 'contact',
      id: contactId,
      first_name: 'Ana',
      last_name: 'García',
      email: `ana${suffix}@example.com`,
      phone_number: '+54 9 11 2345-6789',
      external_id: `crm-${suffix || contactId}`,
      tags: ['vip'],
      custom_fields: { plan: 'pro' },
      is_test: false,
      created_at: '2026-08-04T10:11:12.123456Z',
    },
    {
      type: 'conversation',
      id: conversationId,
      contact_id: contactId,
      channel: 'whatsapp',
      created_at: '2026-08-04T10:12:00.000001Z',
    },
    {
      type: 'message',
      id: messageIds[0],
      conversation_id: conversationId,
      direction: 'inbound',
      sender_type: 'contact',
      text: 'Hola',
      status: 'RECEIVED',
      created_at: '2026-08-04T10:12:00.654321Z',
    },
    {
      type: 'message',
      id: messageIds[1],
      conversation_id: conversationId,
      direction: 'outbound',
      sender_type: 'ai_agent',
      message_type: 'text',
      text: '¡Hola Ana!',
      status: 'ERROR',
      error: 'window closed',
      metadata: { campaign: 'x' },
      created_at: '2026-08-04T10:13:00.999999Z',
    },
    {
      type: 'event',
      id: eventId,
      conversation_id: conversationId,
      contact_id: contactId,
      event_type: 'conversation_archived',
      actor_type: 'api',
      data: { origin: 'import' },
      created_at: '2026-08-04T10:14:00.000500Z',
    },
  ];
  return { contactId, conversationId, messageIds, eventId, records };
}
