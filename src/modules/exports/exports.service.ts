import type { Db } from '../../db/database.ts';
import { CursorCodec } from '../../http/cursor.ts';
import { invalid } from '../../lib/domain-errors.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import { CHANNELS } from '../../channels/channel-types.ts';
import { EVENT_TYPES } from '../events/events.writer.ts';
import { exportsRepository, type JoinedPage, type PageRange } from './exports.repository.ts';
import type { EventsExportQuery, MessagesExportQuery } from './exports.schemas.ts';
import { checkWindow, nowInstant, parseInstant, parseList } from './exports.window.ts';

/**
 * GET /messages and GET /events: keyset walks over (created_at, id), oldest first. The first page
 * fixes `until` (default now) inside the cursor, so a walk covers one fixed window even when records
 * keep arriving; records created after the last served position appear exactly once.
 * The database writes each record as JSON text (exports.repository.ts); an answer joins them as
 * they are into `{"messages": [...], "next_cursor": ...}`.
 */
export class ExportsService {
  private readonly cursors: CursorCodec;

  constructor(
    private readonly db: Db,
    secretKeys: SecretKeys,
  ) {
    this.cursors = new CursorCodec(secretKeys);
  }

  /** The JSON text of a GET /messages answer. */
  async messages(businessId: string, query: MessagesExportQuery): Promise<string> {
    const channels = parseList(query.channel, CHANNELS, 'channel');
    const { range, scope } = this.range(businessId, 'messages', query, { channel: channels });
    return this.page(
      'messages',
      await exportsRepository.messagePage(this.db, businessId, { ...range, channels }),
      range,
      scope,
    );
  }

  /** The JSON text of a GET /events answer. */
  async events(businessId: string, query: EventsExportQuery): Promise<string> {
    const channels = parseList(query.channel, CHANNELS, 'channel');
    const types = parseList(query.types, EVENT_TYPES, 'types');
    const { range, scope } = this.range(businessId, 'events', query, { channel: channels, types });
    return this.page(
      'events',
      await exportsRepository.eventPage(this.db, businessId, { ...range, channels, types }),
      range,
      scope,
    );
  }

  /** The page's bounds from the query, or from the cursor, which must belong to this business and query. */
  private range(
    businessId: string,
    what: string,
    query: MessagesExportQuery,
    filters: Record<string, string[] | undefined>,
  ) {
    const since = parseInstant(query.since, 'since');
    const untilGiven = query.until === undefined ? undefined : parseInstant(query.until, 'until');
    const scope = CursorCodec.scope({ what, businessId, since: since.iso, until: untilGiven?.iso, ...filters });
    if (query.cursor !== undefined) {
      const state = this.cursors.decode(query.cursor, scope);
      const until = state.extra?.until;
      if (!until) throw invalid('invalid cursor');
      return {
        range: { since: since.iso, until, after: { createdAt: state.createdAt, id: state.id }, limit: query.limit },
        scope,
      };
    }
    const until = untilGiven ?? nowInstant();
    checkWindow(since, until);
    return { range: { since: since.iso, until: until.iso, limit: query.limit } satisfies PageRange, scope };
  }

  /**
   * The answer's JSON text: the page's records as the database joined them, and a next_cursor when
   * a further record was read (so a full last page still gets one and next_cursor is null only when
   * the window is done). The cursor's position is the last served record's own id and created_at
   * (the ISO text the cursor keeps).
   */
  private page(key: 'messages' | 'events', page: JoinedPage, range: PageRange, scope: string): string {
    if (!page.more || page.last === null) return `{"${key}":[${page.records}],"next_cursor":null}`;
    const last = JSON.parse(page.last) as { id: string; created_at: string };
    const cursor = this.cursors.encode(
      { createdAt: last.created_at, id: last.id, extra: { until: range.until } },
      scope,
    );
    return `{"${key}":[${page.records}],"next_cursor":${JSON.stringify(cursor)}}`;
  }
}
