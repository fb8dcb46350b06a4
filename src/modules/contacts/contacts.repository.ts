import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import { batchedOnce } from '../../db/prepared-queries.ts';
import type { ContactsTable } from '../../db/types.ts';

export type ContactRow = Selectable<ContactsTable>;

/** The contact's most recent conversation, and when it was closed if none is open. */
export interface ConversationSummary {
  latestConversationId: string | null;
  closedAt: string | null;
}

/** A contact created by a message: its phone and, for a sender, the name of its profile. */
export interface NewMessageContact {
  business_id: string;
  id: string;
  first_name?: string;
  last_name?: string;
  phone_number: string | null;
  phone_key: string;
  tags?: string[];
  custom_fields?: Record<string, unknown>;
  source: string | null;
}

/** Identifiers a contact can be found by; email is compared lower-cased, phone by its key. */
export interface ContactIdentifiers {
  email?: string;
  phoneKey?: string;
  externalId?: string;
}

/** Lower-case (identifiersQuery lower-cases the email) and never a real identifier. */
const IDENTIFIER_PLACEHOLDERS: [string, string, string, string, number] = [
  '\u0000business',
  '\u0000email',
  '\u0000phone',
  '\u0000external',
  -1,
];
const IDENTIFIER_TYPES = ['uuid', 'text', 'text', 'text', 'int4'] as const;
const identifierLookups = new Map<string, (db: Db, ...args: typeof IDENTIFIER_PLACEHOLDERS) => Promise<ContactRow[]>>();

export const contactsRepository = {
  find(db: Db, businessId: string, id: string): Promise<ContactRow | undefined> {
    return db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /**
   * Contacts matching any identifier (OR), their own or kept as an alias after a merge, oldest first.
   * The ids come from a UNION of equality lookups, each on an index that leads with business_id:
   * written as one OR, the planner would scan the whole table for the alias branch.
   */
  findByIdentifiers(db: Db, businessId: string, ids: ContactIdentifiers, limit: number): Promise<ContactRow[]> {
    const email = ids.email?.toLowerCase();
    const has = [email !== undefined, ids.phoneKey !== undefined, ids.externalId !== undefined] as const;
    if (!has.includes(true)) return Promise.resolve([]);
    // Built and compiled once per combination of identifiers, not per call, and the lookups of
    // concurrent requests share statements (prepared-queries.ts).
    const shape = has.join('/');
    let run = identifierLookups.get(shape);
    if (!run) {
      run = batchedOnce(IDENTIFIER_PLACEHOLDERS, IDENTIFIER_TYPES, (d, business, e, phoneKey, externalId, max) => {
        const query = contactsRepository.identifiersQuery(
          d,
          business,
          {
            email: has[0] ? e : undefined,
            phoneKey: has[1] ? phoneKey : undefined,
            externalId: has[2] ? externalId : undefined,
          },
          max,
        );
        if (!query) throw new Error('unreachable: at least one identifier');
        return query;
      });
      identifierLookups.set(shape, run);
    }
    return run(db, businessId, email ?? '', ids.phoneKey ?? '', ids.externalId ?? '', limit);
  },

  /**
   * The query of findByIdentifiers, unexecuted, so a caller can join on it (the conversation lookup
   * reads the contacts and their conversations in one statement); undefined without identifiers.
   */
  identifiersQuery(db: Db, businessId: string, ids: ContactIdentifiers, limit: number) {
    const email = ids.email?.toLowerCase();
    const branches = [];
    if (email !== undefined) {
      branches.push(
        db
          .selectFrom('contacts')
          .select('id')
          .where('business_id', '=', businessId)
          .where(sql<string>`lower(email)`, '=', email),
      );
    }
    if (ids.phoneKey !== undefined) {
      branches.push(
        db
          .selectFrom('contacts')
          .select('id')
          .where('business_id', '=', businessId)
          .where('phone_key', '=', ids.phoneKey),
      );
    }
    if (ids.externalId !== undefined) {
      branches.push(
        db
          .selectFrom('contacts')
          .select('id')
          .where('business_id', '=', businessId)
          .where('external_id', '=', ids.externalId),
      );
    }
    for (const [kind, value] of [
      ['email', email],
      ['phone', ids.phoneKey],
    ] as const) {
      if (value === undefined) continue;
      branches.push(
        db
          .selectFrom('contact_aliases')
          .select('contact_id as id')
          .where('business_id', '=', businessId)
          .where('kind', '=', kind)
          .where('value', '=', value),
      );
    }
    const [first, ...rest] = branches;
    if (!first) return undefined;
    // Each matching id once, then one primary-key probe per id: `id IN (...)`, or a plain join, let
    // the planner scan the business's contacts while a new table had no statistics yet. The LIMIT
    // keeps the LATERAL subquery from being flattened into such a join.
    const matching = rest.reduce((union, branch) => union.union(branch), first);
    return db
      .selectFrom(matching.as('m'))
      .innerJoinLateral(
        (eb) =>
          eb
            .selectFrom('contacts')
            .selectAll()
            .where('contacts.business_id', '=', businessId)
            .whereRef('contacts.id', '=', 'm.id')
            .limit(1)
            .as('k'),
        (join) => join.onTrue(),
      )
      .selectAll('k')
      .orderBy('k.created_at')
      .orderBy('k.id')
      .limit(limit);
  },

  /** The contact, row-locked until the transaction ends, so concurrent updates merge in turn. */
  findForUpdate(db: Db, businessId: string, id: string): Promise<ContactRow | undefined> {
    return db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
  },

  /**
   * Serialises creations that claim the same identifiers (email and phone have no unique index, since
   * imports and merges may hold duplicates): a transaction-scoped advisory lock per identifier.
   */
  async lockIdentifiers(db: Db, businessId: string, identifiers: string[]): Promise<void> {
    for (const identifier of [...identifiers].sort()) {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`${businessId}:${identifier}`}, 0))`.execute(db);
    }
  },

  insert(db: Db, row: Insertable<ContactsTable>): Promise<ContactRow> {
    return db
      .insertInto('contacts')
      .values({ ...row, custom_fields: JSON.stringify(row.custom_fields ?? {}) })
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  /**
   * Contacts created by messages (an inbound sender, a send's recipient), in one statement, their
   * rows as one JSON value (jsonRows); the columns not given take the table's defaults.
   */
  async insertMany(db: Db, rows: NewMessageContact[]): Promise<ContactRow[]> {
    if (rows.length === 0) return [];
    const { rows: inserted } = await sql<ContactRow>`
      insert into contacts (business_id, id, first_name, last_name, phone_number, phone_key, tags, custom_fields, source)
      select v.business_id, v.id, coalesce(v.first_name, ''), coalesce(v.last_name, ''), v.phone_number, v.phone_key,
        coalesce(v.tags, '{}'), coalesce(v.custom_fields, '{}'), v.source
      from ${jsonRows(
        'v',
        {
          business_id: 'uuid',
          id: 'uuid',
          first_name: 'text',
          last_name: 'text',
          phone_number: 'text',
          phone_key: 'text',
          tags: 'text[]',
          custom_fields: 'jsonb',
          source: 'text',
        },
        rows,
      )}
      returning *`.execute(db);
    return inserted;
  },

  update(db: Db, businessId: string, id: string, changes: Updateable<ContactsTable>): Promise<ContactRow> {
    const values =
      changes.custom_fields === undefined
        ? changes
        : { ...changes, custom_fields: JSON.stringify(changes.custom_fields) };
    return db
      .updateTable('contacts')
      .set({ ...values, updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  /** Deletes the contact; its aliases, conversations, messages and events go with it (FK cascades). */
  async remove(db: Db, businessId: string, id: string): Promise<boolean> {
    const row = await db
      .deleteFrom('contacts')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  },

  /** What the camelCase form needs from the contact's conversations, in one query. */
  async conversationSummary(db: Db, businessId: string, contactId: string): Promise<ConversationSummary> {
    const row = await db
      .selectFrom('conversations')
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .select((eb) => [
        eb.fn.count<number>('id').as('total'),
        eb.fn.countAll<number>().filterWhere('closed_at', 'is', null).as('open'),
        eb.fn.max<string | null>('closed_at').as('last_closed_at'),
        eb
          .selectFrom('conversations as latest')
          .select('latest.id')
          .where('latest.business_id', '=', businessId)
          .where('latest.contact_id', '=', contactId)
          .orderBy('latest.created_at', 'desc')
          .orderBy('latest.id', 'desc')
          .limit(1)
          .as('latest_id'),
      ])
      .executeTakeFirstOrThrow();
    return {
      latestConversationId: row.latest_id ?? null,
      closedAt: Number(row.total) > 0 && Number(row.open) === 0 ? row.last_closed_at : null,
    };
  },

  /** The transaction's time: what now() gives every statement of it, the time closeOpenConversations writes. */
  async transactionTime(db: Db): Promise<string> {
    const { rows } = await sql<{ now: string }>`select now() as now`.execute(db);
    return rows[0].now;
  },

  /** Closes every open conversation of the contact at the transaction's time. */
  closeOpenConversations(db: Db, businessId: string, contactId: string) {
    return db
      .updateTable('conversations')
      .set({ closed_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .where('closed_at', 'is', null)
      .returning(['id', 'channel', 'closed_at'])
      .execute();
  },

  /** Copies the contact's tag list onto all its conversations. */
  async setConversationTags(db: Db, businessId: string, contactId: string, tags: string[]): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ tags })
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .execute();
  },
};
