import type { Db } from '../../db/database.ts';
import { CursorCodec } from '../../http/cursor.ts';
import { badRequest } from '../../http/errors.ts';
import { CHANNELS } from '../import/import.schemas.ts';
import { EVENT_TYPES } from '../events/events.writer.ts';
import { toEventRecord, toMessageExport } from './exports.mappers.ts';
import { exportsRepository, type PageRange } from './exports.repository.ts';
import type { EventsExportQuery, MessagesExportQuery } from './exports.schemas.ts';
import { checkWindow, nowInstant, parseInstant, parseList } from './exports.window.ts';

/**
 * GET /messages and GET /events: keyset walks over (created_at, id), oldest first. The first page
 * fixes `until` (default now) inside the cursor, so a walk covers one fixed window even when records
 * keep arriving; records created after the last served position appear exactly once.
 */
export class ExportsService {
  private readonly cursors: CursorCodec;

  constructor(
    private readonly db: Db,
    secretKey: string,
  ) {
    this.cursors = new CursorCodec(secretKey);
  }

  async messages(businessId: string, query: MessagesExportQuery) {
    const channels = parseList(query.channel, CHANNELS, 'channel');
    const { range, scope } = this.range(businessId, 'messages', query, { channel: channels });
    const rows = await exportsRepository.messagesPage(this.db, businessId, { ...range, channels, limit: range.limit + 1 });
    const { page, next_cursor } = this.paginate(rows, range, scope);
    return { messages: page.map(toMessageExport), next_cursor };
  }

  async events(businessId: string, query: EventsExportQuery) {
    const channels = parseList(query.channel, CHANNELS, 'channel');
    const types = parseList(query.types, EVENT_TYPES, 'types');
    const { range, scope } = this.range(businessId, 'events', query, { channel: channels, types });
    const rows = await exportsRepository.eventsPage(this.db, businessId, { ...range, channels, types, limit: range.limit + 1 });
    const { page, next_cursor } = this.paginate(rows, range, scope);
    return { events: page.map(toEventRecord), next_cursor };
  }

  /** The page's bounds from the query, or from the cursor, which must belong to this business and query. */
  private range(businessId: string, what: string, query: MessagesExportQuery, filters: Record<string, string[] | undefined>) {
    const since = parseInstant(query.since, 'since');
    const untilGiven = query.until === undefined ? undefined : parseInstant(query.until, 'until');
    const scope = CursorCodec.scope({ what, businessId, since: since.iso, until: untilGiven?.iso, ...filters });
    if (query.cursor !== undefined) {
      const state = this.cursors.decode(query.cursor, scope);
      const until = state.extra?.until;
      if (!until) throw badRequest('invalid cursor');
      return { range: { since: since.iso, until, after: { createdAt: state.createdAt, id: state.id }, limit: query.limit }, scope };
    }
    const until = untilGiven ?? nowInstant();
    checkWindow(since, until);
    return { range: { since: since.iso, until: until.iso, limit: query.limit } satisfies PageRange, scope };
  }

  /** Keeps `limit` rows; a further row proves there is more, so next_cursor is null only when done. */
  private paginate<R extends { id: string; created_at: string }>(rows: R[], range: PageRange, scope: string) {
    if (rows.length <= range.limit) return { page: rows, next_cursor: null };
    const page = rows.slice(0, range.limit);
    const last = page[page.length - 1]!;
    return { page, next_cursor: this.cursors.encode({ createdAt: last.created_at, id: last.id, extra: { until: range.until } }, scope) };
  }
}
