import { sql, type Kysely } from 'kysely';

/**
 * Contact identities (src/modules/contacts/contact-identity.ts): the addresses a channel reaches a
 * contact by, one row per (business, address kind, value), naming the one contact traffic from that
 * address lands on. Inbound senders and send recipients are found here, by one primary-key probe.
 *
 * Phone and email rows are derived from the contacts' columns (phone_key, lower(email)) and their
 * merge aliases, and name the address's oldest holder by (created_at, id), as the lookups always
 * have (an import may hold twins). Rows of other kinds (a page-scoped id) have no column: the row is
 * the contact's address itself. Both are written by the contacts repository's writer only, in the
 * statements that write contacts and aliases (docs/ARCHITECTURE.md#contact-identities).
 *
 * contact_created_at is the named contact's created_at, so that an insert decides whether its
 * contact is older than the one named now from the row itself: a subquery on contacts would not see
 * a concurrent writer's contact committed after the statement began.
 */
// The foreign key's check locks each new identity's contact again, a third of the time the
// identities take to write; kept, as an identity naming no contact would hold its address from the
// next contact.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE contact_identities (
    business_id uuid NOT NULL,
    kind text NOT NULL,
    value text NOT NULL,
    contact_id uuid NOT NULL,
    contact_created_at timestamptz NOT NULL,
    PRIMARY KEY (business_id, kind, value),
    FOREIGN KEY (business_id, contact_id) REFERENCES contacts (business_id, id) ON DELETE CASCADE
  )`.execute(db);
  await sql`CREATE INDEX contact_identities_contact ON contact_identities (business_id, contact_id)`.execute(db);

  // The identities of the contacts and aliases there are: each address's oldest holder.
  await sql`INSERT INTO contact_identities (business_id, kind, value, contact_id, contact_created_at)
    SELECT DISTINCT ON (h.business_id, h.kind, h.value) h.business_id, h.kind, h.value, c.id, c.created_at
    FROM (
      SELECT business_id, 'phone' AS kind, phone_key AS value, id FROM contacts WHERE phone_key IS NOT NULL
      UNION ALL
      SELECT business_id, 'email', lower(email), id FROM contacts WHERE email IS NOT NULL
      UNION ALL
      SELECT business_id, kind, value, contact_id FROM contact_aliases
    ) h
    JOIN contacts c ON c.business_id = h.business_id AND c.id = h.id
    ORDER BY h.business_id, h.kind, h.value, c.created_at, c.id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE contact_identities`.execute(db);
}
