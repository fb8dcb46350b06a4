import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import { shownContactId } from '../contacts/contacts.repository.ts';
import type { DomainEvent, DomainEventType } from './domain-events.types.ts';

interface EventRow {
  id: number;
  business_id: string;
  type: string;
  conversation_id: string | null;
  subject_id: string;
  data: Record<string, unknown>;
  created_at: string;
}

const toEvent = (r: EventRow): DomainEvent => ({
  id: Number(r.id),
  businessId: r.business_id,
  type: r.type as DomainEventType,
  conversationId: r.conversation_id,
  subjectId: r.subject_id,
  data: r.data,
  createdAt: r.created_at,
});

/** A domain event to write. */
export interface NewDomainEvent {
  businessId: string;
  type: DomainEventType;
  conversationId: string | null;
  subjectId: string;
  data: Record<string, unknown>;
}

/** Inserts a pending row for each event of the CTE `e` (business_id, id, type) and subscriber taking its type. */
const pendingForSubscribers = sql`insert into domain_event_pending (business_id, subscriber, event_id)
  select e.business_id, s.name, e.id from e join domain_event_subscribers s on e.type = any(s.types)`;

/**
 * All SQL of domain events. A subscriber's position is the set of its pending rows: one per event of
 * a type it takes, written in the event's transaction and deleted in the one that hands the event over.
 * A position kept as "after event id N" would be wrong: ids are drawn before the commit, so a
 * transaction holding id 7 may commit after one holding id 8 was read, and id 7 would be skipped
 * (the outbox trap). A pending row cannot be skipped: it is read once committed, whatever its id.
 * Order per conversation holds because the events of a conversation are written while their
 * transaction holds the conversation's row lock (the message insert moves the conversation's
 * counters; the operations update or lock the row) or, for a status change, the message's (which a
 * receipt finds only once its creation committed), so their ids follow their commits and reading in
 * id order hands them over in that order. Events are written by one statement per batch.
 */
export const domainEventsRepository = {
  async insert(db: Db, events: readonly NewDomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map((e, ord) => ({
      ord,
      business_id: e.businessId,
      type: e.type,
      conversation_id: e.conversationId,
      subject_id: e.subjectId,
      data: e.data,
    }));
    const columns = {
      ord: 'int',
      business_id: 'uuid',
      type: 'text',
      conversation_id: 'uuid',
      subject_id: 'uuid',
      data: 'jsonb',
    } as const;
    // Ids are drawn in the order rows are inserted: `order by ord` keeps the caller's order.
    await sql`with e as (
        insert into domain_events (business_id, type, conversation_id, subject_id, data)
        select v.business_id, v.type, v.conversation_id, v.subject_id, v.data
        from ${jsonRows('v', columns, rows)} order by v.ord
        returning business_id, id, type)
      ${pendingForSubscribers}`.execute(db);
  },

  /**
   * One event of `type` per message, in the order given, with what the stored rows say (conversation,
   * contact as readers show it, direction, sender type, and the status unless given), in one statement.
   */
  async insertForMessages(
    db: Db,
    businessId: string,
    type: DomainEventType,
    messages: readonly { id: string; status?: string; change?: string }[],
  ): Promise<void> {
    if (messages.length === 0) return;
    await sql`with e as (
        insert into domain_events (business_id, type, conversation_id, subject_id, data)
        select m.business_id, ${type}::text, m.conversation_id, m.id, jsonb_build_object(
          'contact_id', ${shownContactId('m')}, 'direction', m.direction, 'sender_type', m.sender_type, 'status', coalesce(v.status, m.status))
          || case when v.change is not null then jsonb_build_object('change', v.change) else '{}'::jsonb end
          || case when m.metadata ? 'automated' then '{"automated": true}'::jsonb else '{}'::jsonb end
          -- A message that came while another app held the conversation (inbound.content.ts) says so.
          || case when m.metadata ? 'handed_over' then '{"handed_over": true}'::jsonb else '{}'::jsonb end
        from ${jsonRows(
          'v',
          { ord: 'int', id: 'uuid', status: 'text', change: 'text' },
          messages.map((m, ord) => ({ ord, id: m.id, status: m.status ?? null, change: m.change ?? null })),
        )}
        join messages m on m.business_id = ${businessId} and m.id = v.id
        order by v.ord
        returning business_id, id, type)
      ${pendingForSubscribers}`.execute(db);
  },

  /** Records a subscriber and its types; events written from then on are pending for it. */
  async register(db: Db, name: string, types: readonly string[]): Promise<void> {
    await db
      .insertInto('domain_event_subscribers')
      .values({ name, types: [...types] })
      .onConflict((oc) => oc.column('name').doUpdateSet({ types: [...types] }))
      .execute();
  },

  /**
   * Locks the subscriber's row until the transaction ends: one transaction of one process at a time
   * hands its events over. False when it is not registered.
   */
  async lock(db: Db, name: string): Promise<boolean> {
    const row = await db
      .selectFrom('domain_event_subscribers')
      .select('name')
      .where('name', '=', name)
      .forUpdate()
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * The subscriber's first `limit` pending events, in id order. The pending rows are taken first and
   * their events then read by key: joined before the limit, the planner multiplies the selectivity of
   * business_id by that of the id and, expecting a few rows, hashes every event kept.
   */
  async pending(db: Db, name: string, limit: number): Promise<DomainEvent[]> {
    const rows = await db
      .selectFrom((eb) =>
        eb
          .selectFrom('domain_event_pending')
          .select(['business_id', 'event_id'])
          .where('subscriber', '=', name)
          .orderBy('event_id')
          .limit(limit)
          .as('p'),
      )
      .innerJoin('domain_events as e', (join) =>
        join.onRef('e.business_id', '=', 'p.business_id').onRef('e.id', '=', 'p.event_id'),
      )
      .select(['e.id', 'e.business_id', 'e.type', 'e.conversation_id', 'e.subject_id', 'e.data', 'e.created_at'])
      .orderBy('p.event_id')
      .execute();
    return rows.map(toEvent);
  },

  /**
   * What the kept events span: the oldest and newest kept ids (null when none is kept) and the last
   * id drawn, kept or not (0 before the first).
   */
  async bounds(db: Db): Promise<{ oldest: number | null; newest: number | null; lastDrawn: number }> {
    const { rows } = await sql<{ oldest: number | null; newest: number | null; last_drawn: number | null }>`select
        (select min(id) from domain_events) as oldest,
        (select max(id) from domain_events) as newest,
        pg_sequence_last_value(pg_get_serial_sequence('domain_events', 'id')::regclass) as last_drawn`.execute(db);
    const { oldest, newest, last_drawn } = rows[0];
    return { oldest, newest, lastDrawn: last_drawn ?? 0 };
  },

  /** The business's kept events after `afterId`, in id order, at most `limit`. */
  async ofBusinessAfter(db: Db, businessId: string, afterId: number, limit: number): Promise<DomainEvent[]> {
    const rows = await db
      .selectFrom('domain_events')
      .select(['id', 'business_id', 'type', 'conversation_id', 'subject_id', 'data', 'created_at'])
      .where('business_id', '=', businessId)
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  },

  /**
   * The business's kept events before `beforeId` whose transaction began at most `withinMs` before
   * that of the newest kept event up to `beforeId` (any business's), among the business's last
   * `scan` before it, in id order. These are the events that may have drawn a smaller id and
   * committed after it.
   */
  async ofBusinessJustBefore(
    db: Db,
    businessId: string,
    beforeId: number,
    withinMs: number,
    scan: number,
  ): Promise<DomainEvent[]> {
    const { rows } = await sql<EventRow>`select r.* from (
        select id, business_id, type, conversation_id, subject_id, data, created_at from domain_events
        where business_id = ${businessId} and id < ${beforeId} order by id desc limit ${scan}) r
      where r.created_at >= (select created_at from domain_events where id <= ${beforeId} order by id desc limit 1)
        - make_interval(secs => ${withinMs / 1000})
      order by r.id`.execute(db);
    return rows.map(toEvent);
  },

  /** Moves the subscriber's position past these events. */
  async handedOver(db: Db, name: string, ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await sql`delete from domain_event_pending where subscriber = ${name} and event_id = any(${[...ids]}::bigint[])`.execute(
      db,
    );
  },

  /**
   * Deletes up to `limit` events created before `cutoff` that no subscriber still waits for (older
   * than every pending one); how many.
   */
  async deleteHandedOver(db: Db, cutoff: string, limit: number): Promise<number> {
    const result = await sql`delete from domain_events where id in (
        select id from domain_events
        where created_at < ${cutoff}
          and id < coalesce((select min(m.first) from domain_event_subscribers s
            cross join lateral (select min(event_id) as first from domain_event_pending where subscriber = s.name) m),
            9223372036854775807)
        order by id limit ${limit})`.execute(db);
    return Number(result.numAffectedRows ?? 0n);
  },
};
