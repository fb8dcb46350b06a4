import type { Insertable } from 'kysely';
import type { Db } from '../../../src/db/database.ts';
import type { EventsTable, MessagesTable } from '../../../src/db/types.ts';
import { newId } from '../../../src/lib/ids.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';

/** A timestamp in August 2026 (inside one 31-day window), `seconds` after the 1st, with microseconds. */
export const aug = (seconds: number, micros = 0) =>
  new Date(Date.UTC(2026, 7, 1) + seconds * 1000)
    .toISOString()
    .replace(/\.(\d{3})Z$/, (_, ms: string) => `.${ms}${String(micros).padStart(3, '0')}Z`);

export const WINDOW = `since=${encodeURIComponent('2026-08-01T00:00:00Z')}&until=${encodeURIComponent('2026-08-31T00:00:00Z')}`;

/** A contact with one conversation on `channel`. */
export async function contactWithConversation(
  db: Db,
  businessId: string,
  channel = 'whatsapp',
  contact: { is_test?: boolean } = {},
  conversation: { is_internal?: boolean; is_group?: boolean; channel_id?: string } = {},
) {
  const c = await insertContact(db, businessId, { phone_number: `5511${Math.floor(Math.random() * 1e9)}`, ...contact });
  const conv = await insertConversation(db, businessId, c.id, { channel, ...conversation });
  return { contact: c, conversation: conv };
}

/** Many messages in one statement (counters of the conversation are not needed by exports). */
export async function bulkMessages(
  db: Db,
  businessId: string,
  conv: { id: string; contact_id: string; channel: string },
  rows: Partial<Insertable<MessagesTable>>[],
) {
  const values = rows.map((r) => ({
    id: newId(),
    direction: 'inbound' as const,
    sender_type: 'contact' as const,
    status: 'RECEIVED',
    text: 'hi',
    metadata: {},
    channel: conv.channel,
    contact_id: conv.contact_id,
    conversation_id: conv.id,
    business_id: businessId,
    ...r,
  }));
  for (let i = 0; i < values.length; i += 1000)
    await db
      .insertInto('messages')
      .values(values.slice(i, i + 1000))
      .execute();
  return values;
}

export async function insertEvent(
  db: Db,
  businessId: string,
  row: Partial<Insertable<EventsTable>> & { contact_id: string },
) {
  return db
    .insertInto('events')
    .values({
      id: newId(),
      type: 'conversation_archived',
      actor_type: 'system',
      data: JSON.stringify({ origin: 'api' }),
      channel: null,
      conversation_id: null,
      ...row,
      business_id: businessId,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A record of an export, as the walk reads it. */
export type ExportRecord = { id: string; created_at: string } & Record<string, unknown>;

/**
 * Walks an export to its end, returning every record and the number of pages; each page holds at
 * most the query's `limit`. `onPage` runs between pages (another one follows) with the records so far.
 */
export async function walk(
  t: TestApp,
  tenant: Tenant,
  path: 'messages' | 'events',
  query: string,
  onPage?: (page: number, records: ExportRecord[]) => Promise<void>,
) {
  const limit = Number(new URLSearchParams(query).get('limit') ?? 100);
  const records: ExportRecord[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const url: string = `/external/v2/${path}?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await t.app.inject({ method: 'GET', url, headers: tenant.headers });
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
    const body = res.json();
    if (body[path].length > limit)
      throw new Error(`page ${pages + 1} holds ${body[path].length} records, more than the limit of ${limit}`);
    records.push(...body[path]);
    cursor = body.next_cursor;
    pages += 1;
    if (cursor && onPage) await onPage(pages, records);
  } while (cursor);
  return { records, pages };
}

const WINDOW_MS = 30 * 86_400_000;

/**
 * The ids of the business's rows an export should give (those rule 4 does not exclude), and what
 * the export gives: each 30-day window (an export takes at most 31 days) that holds one of those
 * rows is walked to its end, so rows of any date are reached.
 */
export async function exportEverything(t: TestApp, tenant: Tenant, table: 'messages' | 'events') {
  const rows = await t.database.db
    .selectFrom(table)
    .select(['id', 'created_at'])
    .where('business_id', '=', tenant.businessId)
    .where('excluded', '=', false)
    .execute();
  const first = Math.min(...rows.map((r) => new Date(r.created_at).getTime()));
  const windows = new Set(rows.map((r) => Math.floor((new Date(r.created_at).getTime() - first) / WINDOW_MS)));
  const exported: { id: string; created_at: string }[] = [];
  for (const w of windows) {
    const query = `since=${new Date(first + w * WINDOW_MS).toISOString()}&until=${new Date(first + (w + 1) * WINDOW_MS).toISOString()}&limit=500`;
    exported.push(...(await walk(t, tenant, table, query)).records);
  }
  return { stored: rows.map((r) => r.id), exported };
}
