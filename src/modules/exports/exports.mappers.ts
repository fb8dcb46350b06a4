import type { EventExportRow, MessageExportRow } from './exports.repository.ts';
import type { EventRecord, MessageExport } from './exports.schemas.ts';

type Refs = Pick<MessageExportRow, 'agent_ref' | 'agent_name' | 'user_ref' | 'user_name' | 'user_email'>;

function agentOf(row: Refs): MessageExport['agent'] {
  return row.agent_ref && row.agent_name !== null ? { id: row.agent_ref, name: row.agent_name } : null;
}

function userOf(row: Refs): MessageExport['user'] {
  return row.user_ref && row.user_name !== null && row.user_email !== null
    ? { id: row.user_ref, name: row.user_name, email: row.user_email }
    : null;
}

/** A joined message row in the contract's export form. */
export function toMessageExport(row: MessageExportRow): MessageExport {
  return {
    id: row.id,
    conversation_id: row.conversation_id,
    contact_id: row.contact_id,
    channel: row.channel,
    direction: row.direction,
    sender_type: row.sender_type,
    agent: agentOf(row),
    user: userOf(row),
    type: row.type,
    text: row.text,
    media:
      row.media_id === null
        ? null
        : { id: row.media_id, filename: row.media_filename, content_type: row.media_content_type },
    reply_to_id: row.reply_to_id,
    status: row.status,
    error: row.error,
    created_at: row.created_at,
  };
}

/** A joined event row as the contract's event record. */
export function toEventRecord(row: EventExportRow): EventRecord {
  return {
    id: row.id,
    type: row.type,
    conversation_id: row.conversation_id,
    contact_id: row.contact_id,
    channel: row.channel,
    actor_type: row.actor_type,
    agent: agentOf(row),
    user: userOf(row),
    data: row.data,
    created_at: row.created_at,
  };
}
