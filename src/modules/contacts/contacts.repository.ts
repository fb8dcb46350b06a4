import { sql, type Insertable, type RawBuilder, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import { batchedOnce } from '../../db/prepared-queries.ts';
import type { ContactsTable } from '../../db/types.ts';
import { claimIdentities, contactIdentitiesRepository } from './contact-identities.repository.ts';
import { COLUMN_KINDS, columnIdentities, type AddressIdentity } from './contact-identity.ts';
import type { AddressKind } from '../../channels/addresses.ts';

export type ContactRow = Selectable<ContactsTable>;

/** The contact's most recent conversation, and when it was closed if none is open. */
export interface ConversationSummary {
  latestConversationId: string | null;
  closedAt: string | null;
}

/**
 * A contact created by a message (an inbound sender, a send's recipient): the address it was reached
 * at and, for a sender, the name of its profile.
 */
export interface NewMessageContact {
  business_id: string;
  id: string;
  first_name?: string;
  last_name?: string;
  /** The address's identity (a phone's key, a lower-cased email, a page-scoped id...). */
  identity: AddressIdentity;
  /** The address as its kind's column stores it (a phone's digits); null when nothing of it is storable. */
  address: string | null;
  tags?: string[];
  custom_fields?: Record<string, unknown>;
  source: string | null;
}

/**
 * Identifiers a contact can be found by; email is compared lower-cased, phone by its key, and an
 * address a channel knows the contact by (`identity`: its kind and key) through the identity row,
 * which names the one contact traffic from it lands on.
 */
export interface ContactIdentifiers {
  email?: string;
  phoneKey?: string;
  externalId?: string;
  identity?: AddressIdentity;
}

/** Lower-case (identifiersQuery lower-cases the email) and never a real identifier. */
const IDENTIFIER_PLACEHOLDERS: [string, string, string, string, string, string, number] = [
  '\u0000business',
  '\u0000email',
  '\u0000phone',
  '\u0000external',
  '\u0000kind',
  '\u0000address',
  -1,
];
const IDENTIFIER_TYPES = ['uuid', 'text', 'text', 'text', 'text', 'text', 'int4'] as const;
const identifierLookups = new Map<string, (db: Db, ...args: typeof IDENTIFIER_PLACEHOLDERS) => Promise<ContactRow[]>>();

/**
 * A contact to write: its columns (the others take their defaults) and, for an address of a kind
 * without a column (a page-scoped id), its identity; a phone or an email goes in its columns.
 */
export type NewContact = Omit<Insertable<ContactsTable>, 'merged_into'> & { identity?: AddressIdentity };

/** A contact as the import stores it; timestamps are the ISO strings of the file, read by PostgreSQL. */
export interface ContactImportRow {
  id: string;
  first_name: string;
  last_name: string;
  email: string | null;
  phone_number: string | null;
  phone_key: string | null;
  external_id: string | null;
  tags: string[];
  custom_fields: Record<string, unknown>;
  is_test: boolean;
  created_at: string;
}

/** An email (lower-cased) or phone key a merge left a contact as an alias. */
export interface ContactAlias {
  kind: 'email' | 'phone';
  value: string;
}

/** The columns a writer may give, by their types (jsonRows). */
const contactColumns = {
  business_id: 'uuid',
  id: 'uuid',
  first_name: 'text',
  last_name: 'text',
  email: 'text',
  phone_number: 'text',
  phone_key: 'text',
  external_id: 'text',
  tags: 'text[]',
  custom_fields: 'jsonb',
  collected_data: 'jsonb',
  avatar_url: 'text',
  source: 'text',
  assigned_user_id: 'uuid',
  is_test: 'boolean',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
  identity_kind: 'text',
  identity_value: 'text',
} as const;

/** The insert of contactsRepository.insertRows, answering `answer` (a select from `inserted`). */
function insertStatement<R>(rows: NewContact[], options: { skipExisting?: boolean }, answer: RawBuilder<R>) {
  const columned = rows.find((r) => r.identity && COLUMN_KINDS.includes(r.identity.kind));
  if (columned) throw new Error(`a ${columned.identity!.kind} identity is written from its column, not given`);
  const values = rows.map(({ identity, ...row }) => ({
    ...row,
    identity_kind: identity?.kind,
    identity_value: identity?.value,
  }));
  return sql<R>`
    with v as materialized (select * from ${jsonRows('v', contactColumns, values)}),
    inserted as (
      insert into contacts (business_id, id, first_name, last_name, email, phone_number, phone_key, external_id, tags,
        custom_fields, collected_data, avatar_url, source, assigned_user_id, is_test, created_at, updated_at)
      select v.business_id, v.id, coalesce(v.first_name, ''), coalesce(v.last_name, ''), v.email, v.phone_number,
        v.phone_key, v.external_id, coalesce(v.tags, '{}'), coalesce(v.custom_fields, '{}'),
        coalesce(v.collected_data, '{}'), v.avatar_url, v.source, v.assigned_user_id, coalesce(v.is_test, false),
        coalesce(v.created_at, now()), coalesce(v.updated_at, v.created_at, now())
      from v
      ${options.skipExisting ? sql`on conflict (business_id, id) do nothing` : sql``}
      returning *
    ), ${claimIdentities}
    ${answer}`;
}

/** Deletes the contact when `which` holds of it (c), and settles again the addresses it held. */
async function deleteContact(db: Db, businessId: string, id: string, which: RawBuilder<unknown>): Promise<boolean> {
  const { rows } = await sql<{ phone_key: string | null; email: string | null; aliases: ContactAlias[] }>`
    delete from contacts c where c.business_id = ${businessId} and c.id = ${id} and ${which}
    returning c.phone_key, lower(c.email) as email, (
      select coalesce(json_agg(json_build_object('kind', a.kind, 'value', a.value)), '[]')
      from contact_aliases a where a.business_id = c.business_id and a.contact_id = c.id) as aliases`.execute(db);
  if (!rows[0]) return false;
  await contactIdentitiesRepository.settle(db, businessId, [...columnIdentities(rows[0]), ...rows[0].aliases]);
  return true;
}

/** The keys of the name indexes (migration 0022), as the search compares them. */
const fullNameKey = sql<string>`lower(first_name || ' ' || last_name)`;
const lastNameKey = sql<string>`lower(last_name)`;
const nameRange = (key: RawBuilder<string>, prefix: string) =>
  sql<boolean>`${key} ~>=~ lower(${prefix}) and ${key} ~<~ (lower(${prefix}) || chr(1114111))
    and starts_with(${key}, lower(${prefix}))`;

/**
 * Whose a message's or event's contact is, as readers show it: the survivor of a contact a merge
 * hid (contacts.merged_into; its rows move to the survivor a slice at a time), else the contact.
 * `alias` is the row's table alias, with business_id and contact_id. A probe of contacts_merging,
 * an index of the hidden contacts only, so a row of a contact no merge hid costs one empty descent.
 */
export function shownContactId(alias: string): RawBuilder<string> {
  const business = sql.ref(`${alias}.business_id`);
  const contact = sql.ref(`${alias}.contact_id`);
  return sql<string>`coalesce((select h.merged_into from contacts h
    where h.business_id = ${business} and h.id = ${contact} and h.merged_into is not null), ${contact})`;
}

/**
 * The ids whose messages and events are the history of the contact `contact` (an expression): its
 * own and those of the contacts merges hid into it (index contacts_merged), as a subquery of one
 * column `id`, for a statement that reads them per contact.
 */
export function historyIdsSql(businessId: string, contact: RawBuilder<string>): RawBuilder<{ id: string }> {
  return sql<{ id: string }>`(select ${contact} as id union all
    select h.id from contacts h where h.business_id = ${businessId} and h.merged_into = ${contact})`;
}

/** A contact with the ids of the contacts merges hid into it, whose history is its own from then on. */
export type ContactWithMerged = ContactRow & { merged_ids: string[] };

/** The ids a reader of a contact's messages and events asks for: its own and those of the contacts merged into it. */
export const historyIds = (contact: ContactWithMerged): string[] => [contact.id, ...contact.merged_ids];

export const contactsRepository = {
  /** The contact; none when a merge hid it (contacts.merged_into), as every reader of contacts treats it. */
  find(db: Db, businessId: string, id: string): Promise<ContactRow | undefined> {
    return db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('merged_into', 'is', null)
      .executeTakeFirst();
  },

  /**
   * find, with the contacts merges hid into it (index contacts_merged): their messages and events
   * are the contact's history, read under its id while they move (historyIds).
   */
  async findWithMerged(db: Db, businessId: string, id: string): Promise<ContactWithMerged | undefined> {
    const { rows } = await sql<ContactWithMerged>`
      select c.*, array(select h.id::text from contacts h
        where h.business_id = c.business_id and h.merged_into = c.id order by h.id) as merged_ids
      from contacts c
      where c.business_id = ${businessId} and c.id = ${id} and c.merged_into is null`.execute(db);
    return rows[0];
  },

  /**
   * Contacts matching any identifier (OR), their own or kept as an alias after a merge, oldest first.
   * The ids come from a UNION of equality lookups, each on an index that leads with business_id:
   * written as one OR, the planner would scan the whole table for the alias branch.
   */
  findByIdentifiers(db: Db, businessId: string, ids: ContactIdentifiers, limit: number): Promise<ContactRow[]> {
    const email = ids.email?.toLowerCase();
    const has = [
      email !== undefined,
      ids.phoneKey !== undefined,
      ids.externalId !== undefined,
      ids.identity !== undefined,
    ] as const;
    if (!has.includes(true)) return Promise.resolve([]);
    // Built and compiled once per combination of identifiers, not per call, and the lookups of
    // concurrent requests share statements (prepared-queries.ts).
    const shape = has.join('/');
    let run = identifierLookups.get(shape);
    if (!run) {
      run = batchedOnce(
        IDENTIFIER_PLACEHOLDERS,
        IDENTIFIER_TYPES,
        (d, business, e, phoneKey, externalId, kind, address, max) => {
          const query = contactsRepository.identifiersQuery(
            d,
            business,
            {
              email: has[0] ? e : undefined,
              phoneKey: has[1] ? phoneKey : undefined,
              externalId: has[2] ? externalId : undefined,
              identity: has[3] ? { kind: kind as AddressKind, value: address } : undefined,
            },
            max,
          );
          if (!query) throw new Error('unreachable: at least one identifier');
          return query;
        },
      );
      identifierLookups.set(shape, run);
    }
    const { kind = '', value = '' } = ids.identity ?? {};
    return run(db, businessId, email ?? '', ids.phoneKey ?? '', ids.externalId ?? '', kind, value, limit);
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
    if (ids.identity !== undefined) {
      branches.push(
        db
          .selectFrom('contact_identities')
          .select('contact_id as id')
          .where('business_id', '=', businessId)
          .where('kind', '=', ids.identity.kind)
          .where('value', '=', ids.identity.value),
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
            .where('contacts.merged_into', 'is', null)
            .limit(1)
            .as('k'),
        (join) => join.onTrue(),
      )
      .selectAll('k')
      .orderBy('k.created_at')
      .orderBy('k.id')
      .limit(limit);
  },

  /**
   * A page of the business's contacts, newest first, after a keyset position (index
   * contacts_created): the dashboard's list.
   */
  page(
    db: Db,
    businessId: string,
    after: { createdAt: string; id: string } | undefined,
    limit: number,
  ): Promise<ContactRow[]> {
    let query = db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('merged_into', 'is', null);
    if (after)
      query = query.where((eb) =>
        eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(sql<string>`${after.createdAt}::timestamptz`, after.id)),
      );
    return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  },

  /**
   * Contacts whose full name ("first last") or last name starts with `prefix`, in any case, at most
   * `limit` (indexes contacts_full_name and contacts_last_name). Each is a range of its index: the
   * operators of text_pattern_ops compare bytes, so every text that starts with the prefix lies between
   * it and the prefix followed by the last code point; a LIKE pattern would need its value to plan.
   */
  async idsByNamePrefix(db: Db, businessId: string, prefix: string, limit: number): Promise<string[]> {
    const { rows } = await sql<{ id: string }>`
      select id from (
        (select id from contacts where business_id = ${businessId} and ${nameRange(fullNameKey, prefix)}
          and merged_into is null limit ${limit})
        union
        (select id from contacts where business_id = ${businessId} and ${nameRange(lastNameKey, prefix)}
          and merged_into is null limit ${limit})
      ) m limit ${limit}`.execute(db);
    return rows.map((r) => r.id);
  },

  /** Whether the contact `alias` names has a full name or last name that starts with `prefix`, in any case. */
  nameStartsWith(alias: string, prefix: string): RawBuilder<boolean> {
    const first = sql.ref(`${alias}.first_name`);
    const last = sql.ref(`${alias}.last_name`);
    return sql<boolean>`(starts_with(lower(${first} || ' ' || ${last}), lower(${prefix}))
      or starts_with(lower(${last}), lower(${prefix})))`;
  },

  /** The contact, row-locked until the transaction ends, so concurrent updates merge in turn; none when hidden. */
  findForUpdate(db: Db, businessId: string, id: string): Promise<ContactRow | undefined> {
    return db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('merged_into', 'is', null)
      .forUpdate()
      .executeTakeFirst();
  },

  /**
   * The two contacts of a merge, row-locked in id order so two crossing merges cannot deadlock; a
   * hidden one is not among them. Then the contacts already merged into them, which the merge may
   * repoint (hide): every writer locks a survivor before the contacts hidden into it (the move's
   * slices do too, lockMerged), so none waits in the other order.
   */
  async lockForMerge(db: Db, businessId: string, ids: [string, string]): Promise<ContactRow[]> {
    const rows = await db
      .selectFrom('contacts')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', 'in', ids)
      .where('merged_into', 'is', null)
      .orderBy('id')
      .forUpdate()
      .execute();
    if (rows.length > 0)
      await db
        .selectFrom('contacts')
        .select('id')
        .where('business_id', '=', businessId)
        .where(
          'merged_into',
          'in',
          rows.map((r) => r.id),
        )
        .orderBy('id')
        .forUpdate()
        .execute();
    return rows;
  },

  /**
   * Hides the loser of a merge into its survivor (merged_into), and the contacts hidden into the loser
   * too, so a chain of merges ends on one survivor; call lockForMerge first. The loser's phones and
   * emails are settled again: they name the survivor (its columns or aliases) or an older twin.
   */
  async hide(db: Db, businessId: string, loserId: string, survivorId: string): Promise<void> {
    await db
      .updateTable('contacts')
      .set({ merged_into: survivorId, updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where((eb) => eb.or([eb('id', '=', loserId), eb('merged_into', '=', loserId)]))
      .execute();
    const keys = await contactsRepository.addressKeys(db, businessId, loserId);
    const aliases = await contactsRepository.aliasesOf(db, businessId, loserId);
    if (keys) await contactIdentitiesRepository.settle(db, businessId, [...columnIdentities(keys), ...aliases]);
  },

  /**
   * The survivor a hidden contact is merged into, with both locked for one slice of the move of its
   * history: the survivor first (FOR KEY SHARE: it stays, and merges may still change it), then the
   * hidden contact (FOR UPDATE: a merge that repoints it, a deletion, another runner of its move
   * wait for the slice). Undefined when the contact is gone or not hidden. If a merge repointed it
   * between the two reads, the new survivor is locked and read again.
   */
  async lockMerged(db: Db, businessId: string, id: string): Promise<string | undefined> {
    const mergedInto = async (lock: boolean) => {
      let query = db
        .selectFrom('contacts')
        .select('merged_into')
        .where('business_id', '=', businessId)
        .where('id', '=', id);
      if (lock) query = query.forUpdate();
      return (await query.executeTakeFirst())?.merged_into ?? undefined;
    };
    for (let survivor = await mergedInto(false); survivor !== undefined;) {
      await db
        .selectFrom('contacts')
        .select('id')
        .where('business_id', '=', businessId)
        .where('id', '=', survivor)
        .forKeyShare()
        .execute();
      const locked = await mergedInto(true);
      if (locked === survivor) return survivor;
      survivor = locked;
    }
    return undefined;
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

  /** Inserts one contact (the API's creation), with its identities; see insertRows. */
  async insert(db: Db, row: NewContact): Promise<ContactRow> {
    const [inserted] = await contactsRepository.insertRows(db, [row]);
    return inserted;
  },

  /**
   * Contacts created by messages (an inbound sender, a send's recipient), the address each was
   * reached at in its column (a phone's digits and key, an email) or, for a kind without one, as its
   * identity; see insertRows.
   */
  insertMany(db: Db, rows: NewMessageContact[]): Promise<ContactRow[]> {
    return contactsRepository.insertRows(
      db,
      rows.map(({ identity, address, ...row }) => {
        if (identity.kind === 'phone') return { ...row, phone_number: address, phone_key: identity.value };
        if (identity.kind === 'email') return { ...row, email: address ?? identity.value };
        return { ...row, identity };
      }),
    );
  },

  /**
   * Contacts of an import batch in one statement; a contact whose id exists is skipped, and any
   * other unique violation (a duplicate external_id) fails the batch. Answers the ids that went in;
   * see insertRows.
   */
  async insertImported(db: Db, businessId: string, rows: ContactImportRow[]): Promise<string[]> {
    if (rows.length === 0) return [];
    const { rows: inserted } = await insertStatement(
      rows.map((row) => ({ ...row, business_id: businessId })),
      { skipExisting: true },
      sql<{ id: string }>`select id from inserted`,
    ).execute(db);
    return inserted.map((r) => r.id);
  },

  /**
   * The one statement that writes contacts, with their identities (claimIdentities): the contacts'
   * writers (insert, insertMany, insertImported) all come here, so the phone and email identities
   * never drift from the columns. Here rather than in triggers on contacts, which would lengthen
   * every write of the table unseen by its writer (docs/ARCHITECTURE.md#contact-identities). Rows
   * travel as one JSON value (jsonRows); columns not given take their defaults, updated_at the
   * created_at given.
   */
  async insertRows(db: Db, rows: NewContact[]): Promise<ContactRow[]> {
    if (rows.length === 0) return [];
    const { rows: inserted } = await insertStatement(rows, {}, sql<ContactRow>`select * from inserted`).execute(db);
    return inserted;
  },

  /**
   * Changes a contact. A changed phone or email (a merge) settles again the addresses it held and
   * holds (contactIdentitiesRepository.settle), as does a changed created_at with its aliases too.
   */
  async update(db: Db, businessId: string, id: string, changes: Updateable<ContactsTable>): Promise<ContactRow> {
    const values = { ...changes };
    // Serialised here: a driver would send a top-level JSON array as a PostgreSQL array.
    if (changes.custom_fields !== undefined) values.custom_fields = JSON.stringify(changes.custom_fields);
    if (changes.collected_data !== undefined) values.collected_data = JSON.stringify(changes.collected_data);
    const addressed =
      changes.phone_key !== undefined || changes.email !== undefined || changes.created_at !== undefined;
    const before = addressed ? await contactsRepository.addressKeys(db, businessId, id) : undefined;
    const row = await db
      .updateTable('contacts')
      .set({ ...values, updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (before) {
      const after = await contactsRepository.addressKeys(db, businessId, id);
      const moved = before.created_at !== row.created_at;
      if (moved) await contactIdentitiesRepository.followCreatedAt(db, businessId, id, row.created_at);
      const aliases = moved ? await contactsRepository.aliasesOf(db, businessId, id) : [];
      await contactIdentitiesRepository.settle(db, businessId, [
        ...columnIdentities(before),
        ...columnIdentities(after),
        ...aliases,
      ]);
    }
    return row;
  },

  /**
   * Takes a removed user off every contact of the business assigned to them, in one statement (index
   * contacts_assigned_user); answers the contacts it changed.
   */
  unassignUser(db: Db, businessId: string, userId: string) {
    return db
      .updateTable('contacts')
      .set({ assigned_user_id: null, updated_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('assigned_user_id', '=', userId)
      .returning('id')
      .execute();
  },

  /**
   * Deletes the contact (none when hidden); its aliases, identities, conversations, messages and
   * events go with it, and so do the contacts merges hid into it with theirs (FK cascades). An
   * address it shared with a twin names the twin now (settled again).
   */
  remove(db: Db, businessId: string, id: string): Promise<boolean> {
    return deleteContact(db, businessId, id, sql`c.merged_into is null`);
  },

  /** Deletes a contact a merge hid, at the end of the move of its history (its aliases go with it). */
  removeMerged(db: Db, businessId: string, id: string): Promise<boolean> {
    return deleteContact(db, businessId, id, sql`c.merged_into is not null`);
  },

  /** The contact's phone key and lower-cased email, as its identities hold them, and its created_at. */
  async addressKeys(db: Db, businessId: string, id: string) {
    const { rows } = await sql<{ phone_key: string | null; email: string | null; created_at: string }>`
      select phone_key, lower(email) as email, created_at from contacts
      where business_id = ${businessId} and id = ${id}`.execute(db);
    return rows[0];
  },

  /** The emails and phone keys a merge left the contact as aliases. */
  aliasesOf(db: Db, businessId: string, contactId: string): Promise<ContactAlias[]> {
    return db
      .selectFrom('contact_aliases')
      .select(['kind', 'value'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .execute();
  },

  /** Aliases for a contact (a merge's survivor), which their addresses then name when it is their oldest holder. */
  async addAliases(db: Db, businessId: string, contactId: string, aliases: ContactAlias[]): Promise<void> {
    if (aliases.length === 0) return;
    await db
      .insertInto('contact_aliases')
      .values(aliases.map((a) => ({ business_id: businessId, contact_id: contactId, kind: a.kind, value: a.value })))
      .onConflict((oc) => oc.doNothing())
      .execute();
    await contactIdentitiesRepository.settle(db, businessId, aliases);
  },

  /** Copies a contact's aliases to another (a merge's loser's to the survivor); the originals go with their contact. */
  async copyAliases(db: Db, businessId: string, fromId: string, toId: string): Promise<void> {
    const copied = await db
      .insertInto('contact_aliases')
      .columns(['business_id', 'kind', 'value', 'contact_id'])
      .expression((eb) =>
        eb
          .selectFrom('contact_aliases')
          .select(['business_id', 'kind', 'value', eb.val(toId).as('contact_id')])
          .where('business_id', '=', businessId)
          .where('contact_id', '=', fromId),
      )
      .onConflict((oc) => oc.doNothing())
      .returning(['kind', 'value'])
      .execute();
    await contactIdentitiesRepository.settle(db, businessId, copied);
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

  /**
   * The transaction's time: what now() gives every statement of it, the time
   * conversationOpsRepository.closeOpenOfContact writes.
   */
  async transactionTime(db: Db): Promise<string> {
    const { rows } = await sql<{ now: string }>`select now() as now`.execute(db);
    return rows[0].now;
  },
};
