import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { ContactsTable } from '../../db/types.ts';
import { COLUMN_KINDS, identityKey, type AddressIdentity } from './contact-identity.ts';

type ContactRow = Selectable<ContactsTable>;

/** A contact found by one of its identities, with the identity asked. */
export type IdentifiedContact = ContactRow & { identity_kind: string; identity_value: string };

/** Rows of identitiesQuery as contacts keyed by the identity asked (identityKey). */
export function byIdentity(rows: IdentifiedContact[]): Map<string, ContactRow> {
  return new Map(
    rows.map(({ identity_kind: kind, identity_value: value, ...row }) => [identityKey({ kind, value }), row]),
  );
}

/**
 * The part of the contacts' insert statement (contactsRepository.insertRows) that writes their
 * identities, as common table expressions after `v` (the rows given, with `identity_kind` and
 * `identity_value` for an address of a kind without a column) and `inserted` (the contacts written).
 * Each phone key and lower-cased email goes to its oldest holder: to the new contact when no contact
 * holds it yet or the new one is older (twins in one batch: the oldest of them). An address of
 * another kind is the new contact's own.
 */
export const claimIdentities = sql`
  held as (
    select business_id, 'phone' as kind, phone_key as value, id, created_at from inserted where phone_key is not null
    union all
    select business_id, 'email', lower(email), id, created_at from inserted where email is not null
    union all
    select i.business_id, v.identity_kind, v.identity_value, i.id, i.created_at
    from inserted i join v on v.id = i.id
    where v.identity_kind is not null
  ), claimed as (
    insert into contact_identities (business_id, kind, value, contact_id, contact_created_at)
    select distinct on (business_id, kind, value) business_id, kind, value, id, created_at
    from held
    order by business_id, kind, value, created_at, id
    on conflict (business_id, kind, value) do update
      set contact_id = excluded.contact_id, contact_created_at = excluded.contact_created_at
      where (excluded.contact_created_at, excluded.contact_id)
        < (contact_identities.contact_created_at, contact_identities.contact_id)
  )`;

/** The contacts' identities: what each address names, and how the contacts' writer keeps them right. */
export const contactIdentitiesRepository = {
  /**
   * The contact each address names, in one statement: per identity (jsonRows), one probe of the
   * identities' primary key and one of the contacts'. Keyed by identityKey; an address no contact
   * holds is absent.
   */
  async find(db: Db, businessId: string, identities: AddressIdentity[]): Promise<Map<string, ContactRow>> {
    if (identities.length === 0) return new Map();
    const { rows } = await contactIdentitiesRepository.query(businessId, identities).execute(db);
    return byIdentity(rows);
  },

  /**
   * The statement of find, unexecuted, so a caller can lock or read more in the same round trip (the
   * inbound senders' lookup takes their conversations' locks): the contact's columns and the
   * identity asked (`identity_kind`, `identity_value`; byIdentity splits them).
   */
  query(businessId: string, identities: AddressIdentity[]): RawBuilder<IdentifiedContact> {
    return sql<IdentifiedContact>`
      select p.kind as identity_kind, p.value as identity_value, k.*
      from ${jsonRows(
        'p',
        { kind: 'text', value: 'text' },
        identities.map(({ kind, value }) => ({ kind, value })),
      )}
      cross join lateral (
        select c.* from contact_identities i
        cross join lateral (select * from contacts c where c.business_id = i.business_id and c.id = i.contact_id limit 1) c
        where i.business_id = ${businessId} and i.kind = p.kind and i.value = p.value
        limit 1) k`;
  },

  /**
   * Names each phone key and lower-cased email given by its oldest holder again (by its columns or an
   * alias; a contact a merge hid holds none), or removes it when none holds it any more: after a
   * change that may have taken an address from the contact it names (a deletion, a merge, a changed
   * column, a new alias). Other kinds are skipped.
   */
  async settle(db: Db, businessId: string, identities: AddressIdentity[]): Promise<void> {
    const keys = identities.filter((i) => COLUMN_KINDS.includes(i.kind) && i.value !== '');
    if (keys.length === 0) return;
    await sql`
      with keys as (
        select distinct p.kind, p.value from ${jsonRows(
          'p',
          { kind: 'text', value: 'text' },
          keys.map(({ kind, value }) => ({ kind, value })),
        )}
      ), holders as (
        select keys.kind, keys.value, h.id, h.created_at
        from keys left join lateral (
          select c.id, c.created_at from (
            select id from contacts where keys.kind = 'phone' and business_id = ${businessId} and phone_key = keys.value
            union
            select id from contacts where keys.kind = 'email' and business_id = ${businessId} and lower(email) = keys.value
            union
            select contact_id from contact_aliases a
            where a.business_id = ${businessId} and a.kind = keys.kind and a.value = keys.value
          ) m
          cross join lateral (
            select x.id, x.created_at from contacts x
            where x.business_id = ${businessId} and x.id = m.id and x.merged_into is null limit 1
          ) c
          order by c.created_at, c.id
          limit 1
        ) h on true
      ), gone as (
        delete from contact_identities i using holders h
        where h.id is null and i.business_id = ${businessId} and i.kind = h.kind and i.value = h.value
      )
      insert into contact_identities (business_id, kind, value, contact_id, contact_created_at)
      select ${businessId}, kind, value, id, created_at from holders where id is not null
      on conflict (business_id, kind, value) do update
        set contact_id = excluded.contact_id, contact_created_at = excluded.contact_created_at
        where (contact_identities.contact_id, contact_identities.contact_created_at)
          is distinct from (excluded.contact_id, excluded.contact_created_at)`.execute(db);
  },

  /**
   * The identities of one contact become another's (a merge): its addresses now name the survivor.
   * Its phones and emails are settled again when it is hidden (another holder may be older).
   */
  async move(db: Db, businessId: string, fromId: string, toId: string): Promise<void> {
    await sql`
      update contact_identities i set contact_id = s.id, contact_created_at = s.created_at
      from contacts s
      where s.business_id = ${businessId} and s.id = ${toId}
        and i.business_id = ${businessId} and i.contact_id = ${fromId}`.execute(db);
  },

  /**
   * The addresses channels know each contact by that are not its columns (a page-scoped id, say),
   * by contact id: what the contact's API form lists as its identities.
   */
  async channelAddresses(db: Db, businessId: string, contactIds: string[]): Promise<Map<string, AddressIdentity[]>> {
    const found = new Map<string, AddressIdentity[]>();
    if (contactIds.length === 0) return found;
    const rows = await db
      .selectFrom('contact_identities')
      .select(['contact_id', 'kind', 'value'])
      .where('business_id', '=', businessId)
      .where('contact_id', 'in', contactIds)
      .where('kind', 'not in', COLUMN_KINDS)
      .orderBy('contact_id')
      .orderBy('kind')
      .orderBy('value')
      .execute();
    for (const { contact_id, kind, value } of rows) {
      const list = found.get(contact_id) ?? [];
      list.push({ kind: kind as AddressIdentity['kind'], value });
      found.set(contact_id, list);
    }
    return found;
  },

  /** A contact's created_at as the rows naming it hold it, after it changed. */
  async followCreatedAt(db: Db, businessId: string, contactId: string, createdAt: string): Promise<void> {
    await db
      .updateTable('contact_identities')
      .set({ contact_created_at: createdAt })
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .execute();
  },
};
