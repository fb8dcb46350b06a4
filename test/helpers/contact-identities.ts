import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';

/** A row of contact_identities, as the tests compare them. */
export interface IdentityRow {
  kind: string;
  value: string;
  contact_id: string;
}

/** The identities of a business, by kind and value. */
export async function identitiesOf(db: Db, businessId: string): Promise<IdentityRow[]> {
  return db
    .selectFrom('contact_identities')
    .select(['kind', 'value', 'contact_id'])
    .where('business_id', '=', businessId)
    .orderBy('kind')
    .orderBy('value')
    .execute();
}

/**
 * How contact_identities differs, in every business, from what the contacts and their aliases say
 * (each phone key and lower-cased email names its oldest holder, by (created_at, id), among the
 * contacts no merge hid), and rows of other kinds whose contact_created_at is not their contact's:
 * empty when nothing drifted.
 */
export async function identityDrift(db: Db): Promise<unknown[]> {
  const { rows } = await sql`
    with expected as (
      select distinct on (h.business_id, h.kind, h.value)
        h.business_id, h.kind, h.value, c.id as contact_id, c.created_at as contact_created_at
      from (
        select business_id, 'phone' as kind, phone_key as value, id from contacts where phone_key is not null
        union all
        select business_id, 'email', lower(email), id from contacts where email is not null
        union all
        select business_id, kind, value, contact_id from contact_aliases
      ) h
      join contacts c on c.business_id = h.business_id and c.id = h.id and c.merged_into is null
      order by h.business_id, h.kind, h.value, c.created_at, c.id
    ), actual as (
      select business_id, kind, value, contact_id, contact_created_at
      from contact_identities where kind in ('phone', 'email')
    )
    select 'missing' as problem, m.* from (select * from expected except select * from actual) m
    union all
    select 'extra', x.* from (select * from actual except select * from expected) x
    union all
    select 'stale', i.business_id, i.kind, i.value, i.contact_id, i.contact_created_at
    from contact_identities i join contacts c on c.business_id = i.business_id and c.id = i.contact_id
    where i.contact_created_at <> c.created_at`.execute(db);
  return rows;
}
