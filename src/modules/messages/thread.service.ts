import type { Db } from '../../db/database.ts';
import { CursorCodec, type CursorPosition } from '../../http/cursor.ts';
import { notFound } from '../../lib/domain-errors.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import { eventsRepository, type ConversationEventRow } from '../events/events.repository.ts';
import { THREAD_EVENT_TYPES } from '../events/events.writer.ts';
import type { MediaLink, MediaService } from '../media/media.service.ts';
import { messageParts } from './message-parts.ts';
import { threadRepository, type ThreadMessageRow } from './thread.repository.ts';
import type { ThreadEvent, ThreadMessage, ThreadQuery } from './thread.schemas.ts';

/** A row read for the page, before it is shown. */
type Row = { kind: 'message'; row: ThreadMessageRow } | { kind: 'event'; row: ConversationEventRow };

const named = (id: string | null, name: string | null) => (id !== null && name !== null ? { id, name } : null);

/** A file a send delivered from the business's own address (outbound_content), which has no media row. */
function sentFile(content: unknown): ThreadMessage['media'] {
  const c = content as { kind?: unknown; url?: unknown; filename?: unknown } | null;
  if (c?.kind !== 'media' || typeof c.url !== 'string') return [];
  const filename = typeof c.filename === 'string' ? c.filename : null;
  return [{ id: null, url: c.url, filename, content_type: null, expires_at: null }];
}

function toThreadMessage(row: ThreadMessageRow, files: MediaLink[]): ThreadMessage {
  const parts = messageParts(row.metadata);
  const choice = parts.interactive
    ? {
        title: parts.interactive.title,
        id: parts.interactive.id,
        description: parts.interactive.description,
        payload: null,
      }
    : parts.button && { title: parts.button.text, id: null, description: null, payload: parts.button.payload };
  return {
    kind: 'message',
    id: row.id,
    created_at: row.created_at,
    direction: row.direction,
    type: row.type,
    text: row.text,
    media: [
      ...files.map((f) => ({
        id: f.id,
        url: f.url,
        filename: f.filename,
        content_type: f.contentType,
        expires_at: f.expiresAt,
      })),
      ...sentFile(row.outbound_content),
    ],
    location: parts.location,
    contacts: parts.contacts,
    choice,
    reaction: parts.reaction,
    reply_to:
      row.reply_to_id === null
        ? null
        : { id: row.reply_to_id, type: row.reply_type, text: row.reply_text, direction: row.reply_direction },
    forwarded: parts.forwarded,
    status: row.status,
    error: row.error,
    sender: {
      type: row.sender_type,
      user: named(row.user_id, row.user_name),
      agent: named(row.agent_id, row.agent_name),
    },
  };
}

function toThreadEvent(row: ConversationEventRow): ThreadEvent {
  return {
    kind: 'event',
    id: row.id,
    created_at: row.created_at,
    type: row.type as ThreadEvent['type'],
    actor_type: row.actor_type,
    user: named(row.user_id, row.user_name),
    agent: named(row.agent_id, row.agent_name),
    data: row.data,
  };
}

/** Timestamps share one fixed-width ISO form, so text order is time order. */
function newestFirst({ row: a }: Row, { row: b }: Row): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * A conversation's thread for the dashboard: its messages, each with what the page shows (files
 * with signed addresses, location, contact cards, the quoted message, who sent it, its status and
 * failure), and its events of control, transfers, AI agents, resolution and archive, merged
 * newest first on (created_at, id). Each side reads `limit + 1` from its conversation index, so
 * the merge knows whether older items remain.
 */
export class ThreadService {
  private readonly cursors: CursorCodec;

  constructor(
    private readonly db: Db,
    private readonly media: Pick<MediaService, 'forMessages'>,
    secretKeys: SecretKeys,
  ) {
    this.cursors = new CursorCodec(secretKeys);
  }

  async list(businessId: string, conversationId: string, query: ThreadQuery) {
    if (!(await threadRepository.conversationExists(this.db, businessId, conversationId)))
      throw notFound('conversation');
    const scope = CursorCodec.scope({ what: 'thread', businessId, conversationId });
    const at: CursorPosition | undefined =
      query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, scope);
    const [messages, events] = await Promise.all([
      threadRepository.messages(this.db, businessId, conversationId, at, query.limit + 1),
      eventsRepository.ofConversation(this.db, businessId, conversationId, THREAD_EVENT_TYPES, at, query.limit + 1),
    ]);
    const merged: Row[] = [
      ...messages.map((row) => ({ kind: 'message' as const, row })),
      ...events.map((row) => ({ kind: 'event' as const, row })),
    ].sort(newestFirst);
    const page = merged.slice(0, query.limit);
    const files = await this.media.forMessages(
      businessId,
      page.flatMap((r) => (r.kind === 'message' ? [r.row.id] : [])),
    );
    const items = page.map((r) =>
      r.kind === 'message' ? toThreadMessage(r.row, files.get(r.row.id) ?? []) : toThreadEvent(r.row),
    );
    const more = merged.length > query.limit;
    const last = items[items.length - 1];
    return {
      items,
      next_cursor: more ? this.cursors.encode({ createdAt: last.created_at, id: last.id }, scope) : null,
    };
  }
}
