import type { Db } from '../../db/database.ts';
import { CursorCodec, type CursorPosition } from '../../http/cursor.ts';
import { notFound } from '../../lib/domain-errors.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import { contactsRepository, historyIds } from '../contacts/contacts.repository.ts';
import { toEventRecord, toMessageExport } from '../exports/exports.mappers.ts';
import { timelineRepository } from './timeline.repository.ts';
import type { TimelineItem, TimelineQuery } from './timeline.schemas.ts';

/**
 * GET /contacts/:uuid/timeline: the contact's messages and events (with those of the contacts merged
 * into it, shown as its own) merged newest first on one key, (created_at, id) descending; each side
 * reads `limit + 1` rows from its contact index, so the merge always knows whether more remain.
 */
export class TimelineService {
  private readonly cursors: CursorCodec;

  constructor(
    private readonly db: Db,
    secretKeys: SecretKeys,
  ) {
    this.cursors = new CursorCodec(secretKeys);
  }

  async list(businessId: string, contactId: string, query: TimelineQuery) {
    const contact = await contactsRepository.findWithMerged(this.db, businessId, contactId);
    if (!contact) throw notFound('contact');
    const ids = historyIds(contact);
    const scope = CursorCodec.scope({ what: 'timeline', businessId, contactId });
    const at: CursorPosition | undefined =
      query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, scope);
    const [messages, events] = await Promise.all([
      timelineRepository.messages(this.db, businessId, ids, at, query.limit + 1),
      timelineRepository.events(this.db, businessId, ids, at, query.limit + 1),
    ]);
    const merged: TimelineItem[] = [
      ...messages.map((row) => ({ kind: 'message' as const, ...toMessageExport(row) })),
      ...events.map((row) => ({ kind: 'event' as const, ...toEventRecord(row) })),
    ].sort(newestFirst);
    if (merged.length <= query.limit) return { items: merged, next_cursor: null };
    const items = merged.slice(0, query.limit);
    const last = items[items.length - 1];
    return { items, next_cursor: this.cursors.encode({ createdAt: last.created_at, id: last.id }, scope) };
  }
}

/** Timestamps share one fixed-width ISO form, so text order is time order. */
function newestFirst(a: TimelineItem, b: TimelineItem): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
