import { sql, type Kysely } from 'kysely';

/**
 * Domain events keyed by business first, so the schema can be distributed by business_id
 * (docs/SCALING.md): the events' primary key becomes (business_id, id), and each subscriber's pending
 * rows carry their event's business, so reading them with their events joins within one business.
 * The dispatchers still read a subscriber's pending rows in id order across businesses, by their own
 * index, and the retention deletes by id, by another.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE domain_event_pending ADD COLUMN business_id uuid`.execute(db);
  await sql`UPDATE domain_event_pending p SET business_id = e.business_id
    FROM domain_events e WHERE e.id = p.event_id`.execute(db);
  // A pending row outlives its event only if it was written by hand: there is nothing to hand over.
  await sql`DELETE FROM domain_event_pending WHERE business_id IS NULL`.execute(db);
  await sql`ALTER TABLE domain_event_pending ALTER COLUMN business_id SET NOT NULL,
    DROP CONSTRAINT domain_event_pending_pkey,
    ADD PRIMARY KEY (business_id, subscriber, event_id)`.execute(db);
  await sql`CREATE INDEX domain_event_pending_subscriber ON domain_event_pending (subscriber, event_id)`.execute(db);
  // The new primary key is the index domain_events_business was: one of the two goes.
  await sql`ALTER TABLE domain_events DROP CONSTRAINT domain_events_pkey, ADD PRIMARY KEY (business_id, id)`.execute(
    db,
  );
  await sql`DROP INDEX domain_events_business`.execute(db);
  await sql`CREATE INDEX domain_events_id ON domain_events (id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS domain_events_id`.execute(db);
  await sql`CREATE INDEX domain_events_business ON domain_events (business_id, id)`.execute(db);
  await sql`ALTER TABLE domain_events DROP CONSTRAINT domain_events_pkey, ADD PRIMARY KEY (id)`.execute(db);
  await sql`DROP INDEX IF EXISTS domain_event_pending_subscriber`.execute(db);
  await sql`ALTER TABLE domain_event_pending DROP CONSTRAINT domain_event_pending_pkey,
    ADD PRIMARY KEY (subscriber, event_id)`.execute(db);
  await sql`ALTER TABLE domain_event_pending DROP COLUMN business_id`.execute(db);
}
