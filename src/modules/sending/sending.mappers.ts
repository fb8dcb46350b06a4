import type { Db } from '../../db/database.ts';
import type { ConversationRow } from '../conversations/conversation-store.repository.ts';
import type { OutboundMessage } from '../messages/message-status.repository.ts';
import { usersRepository } from '../users/users.repository.ts';
import type { SendConversation } from './sending.schemas.ts';

/** Status names of the status endpoint: `enqueued` while queued, then the delivery state in lower case. */
const statusNames: Record<string, string> = {
  PENDING: 'enqueued',
  SENT: 'sent',
  DELIVERED: 'delivered',
  READ: 'read',
  ERROR: 'failed',
};

/**
 * The sent-message status record of the contract, with two extensions: `error`, why the send failed
 * or, while it is still queued, why its last attempt failed; and `attempts`, the attempts so far.
 */
export function toStatusRecord(row: OutboundMessage) {
  const status = statusNames[row.status] ?? row.status.toLowerCase();
  return {
    uuid: row.id,
    status,
    error: row.status === 'ERROR' || row.status === 'PENDING' ? row.error : null,
    attempts: row.send_attempts,
    messageStatusPayload: {
      id: row.id,
      type: status,
      payload: {
        type: row.type === 'template' ? ('template' as const) : ('session' as const),
        whatsappMessageId: row.provider_message_id ?? null,
      },
      destination: row.recipient_address ?? '',
    },
  };
}

/** The conversation a send went to (fields=conversation). */
export async function toSendConversation(db: Db, row: ConversationRow): Promise<SendConversation> {
  const user = row.assigned_user_id ? await usersRepository.find(db, row.business_id, row.assigned_user_id) : undefined;
  return {
    id: row.id,
    platform: row.channel,
    channel_id: row.channel_id,
    created_at: row.created_at,
    last_message_at: row.last_message_at,
    message_count: row.message_count,
    closed_at: row.closed_at,
    manual_control: row.manual_control,
    assigned_user: user?.email ?? null,
    team_uuid: row.team_id,
    agent_id: row.agent_id,
  };
}
