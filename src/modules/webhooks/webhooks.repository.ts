import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { WebhooksTable } from '../../db/types.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';

export type WebhookRow = Selectable<WebhooksTable>;
/**
 * A webhook's secrets as stored: its signing secrets (sealed, or in the clear if stored by an
 * earlier version) and its custom header values (sealed, or in the clear while `headers_sealed` is false).
 */
export type StoredSecrets = Pick<
  WebhookRow,
  'business_id' | 'id' | 'secret' | 'previous_secret' | 'headers' | 'headers_sealed'
>;
/** What the start-up pass writes in place of a row's stored secrets. */
export interface SealedSecrets {
  secret: string;
  previous_secret: string | null;
  headers: Record<string, string>;
}

/** All SQL of webhook registrations. */
export const webhooksRepository = {
  insert(db: Db, row: Insertable<WebhooksTable>): Promise<WebhookRow> {
    return db
      .insertInto('webhooks')
      .values({ ...row, headers: JSON.stringify(row.headers ?? {}) })
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  find(db: Db, businessId: string, id: string): Promise<WebhookRow | undefined> {
    return db
      .selectFrom('webhooks')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  list(db: Db, businessId: string, limit: number): Promise<WebhookRow[]> {
    return db
      .selectFrom('webhooks')
      .selectAll()
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  async count(db: Db, businessId: string): Promise<number> {
    const row = await db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('business_id', '=', businessId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  },

  /** Ids of the enabled webhooks of an event: who gets a delivery. */
  async enabledFor(db: Db, businessId: string, event: string): Promise<string[]> {
    const { rows } = await sql<{ ids: string[] }>`select array(select id::text from webhooks
      where business_id = ${businessId} and event = ${event} and enabled order by id) as ids`.execute(db);
    return rows[0].ids;
  },

  /** Messages by id, for building payloads. */
  messages(db: Db, businessId: string, ids: readonly string[]) {
    return db.selectFrom('messages').selectAll().where('business_id', '=', businessId).where('id', 'in', ids).execute();
  },

  /**
   * Contacts by id (the rows the contacts module maps to its camelCase form), each with the id it
   * was asked by (`asked`): a contact a merge hid is answered with its survivor, which the messages
   * still naming it belong to while they move.
   */
  async contacts(db: Db, businessId: string, ids: readonly string[]) {
    const { rows } = await sql<ContactRow & { asked: string }>`
      select k.*, c.id as asked from contacts c
      join contacts k on k.business_id = c.business_id and k.id = coalesce(c.merged_into, c.id)
      where c.business_id = ${businessId} and c.id = any(${[...ids]}::uuid[])`.execute(db);
    return rows;
  },

  update(db: Db, businessId: string, id: string, changes: Updateable<WebhooksTable>): Promise<WebhookRow | undefined> {
    const set = changes.headers === undefined ? changes : { ...changes, headers: JSON.stringify(changes.headers) };
    return db
      .updateTable('webhooks')
      .set(set)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  },

  /**
   * A new signing secret, the current one kept as the previous until `previousExpiresAt`, in one
   * statement: of two rotations at once, the second keeps the first's secret as its previous.
   */
  rotateSecret(
    db: Db,
    businessId: string,
    id: string,
    secret: string,
    previousExpiresAt: string,
    at: string,
  ): Promise<WebhookRow | undefined> {
    return db
      .updateTable('webhooks')
      .set((eb) => ({
        previous_secret: eb.ref('secret'),
        secret,
        previous_secret_expires_at: previousExpiresAt,
        updated_at: at,
      }))
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  },

  /** The secrets of the webhooks of every business, in (business_id, id) order after `after`: a maintenance pass. */
  secretsAfter(
    db: Db,
    after: { business_id: string; id: string } | undefined,
    limit: number,
  ): Promise<StoredSecrets[]> {
    let query = db
      .selectFrom('webhooks')
      .select(['business_id', 'id', 'secret', 'previous_secret', 'headers', 'headers_sealed']);
    if (after)
      query = query.where((eb) => eb(eb.refTuple('business_id', 'id'), '>', eb.tuple(after.business_id, after.id)));
    return query.orderBy('business_id').orderBy('id').limit(limit).execute();
  },

  /**
   * Replaces a webhook's secrets if they are still those of `row` (no rotation or edit came
   * between); whether it did. The header values it writes are sealed.
   */
  async replaceSecretsIf(db: Db, row: StoredSecrets, sealed: SealedSecrets): Promise<boolean> {
    let query = db
      .updateTable('webhooks')
      .set({
        secret: sealed.secret,
        previous_secret: sealed.previous_secret,
        headers: JSON.stringify(sealed.headers),
        headers_sealed: true,
      })
      .where('business_id', '=', row.business_id)
      .where('id', '=', row.id)
      .where('secret', '=', row.secret)
      .where('headers', '=', sql<Record<string, string>>`${JSON.stringify(row.headers)}::jsonb`)
      .where('headers_sealed', '=', row.headers_sealed);
    query =
      row.previous_secret === null
        ? query.where('previous_secret', 'is', null)
        : query.where('previous_secret', '=', row.previous_secret);
    return (await query.executeTakeFirst()).numUpdatedRows > 0n;
  },

  async remove(db: Db, businessId: string, id: string): Promise<boolean> {
    const result = await db
      .deleteFrom('webhooks')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  },

  /**
   * After a success: ends the failure run. Written only when something changes or the last
   * success is older than a minute, so a busy endpoint does not rewrite its row on every call.
   */
  async recordSuccess(db: Db, businessId: string, id: string, at: string, staleBefore: string): Promise<void> {
    await db
      .updateTable('webhooks')
      .set({ last_success_at: at, first_failure_at: null })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where((eb) =>
        eb.or([
          eb('first_failure_at', 'is not', null),
          eb('last_success_at', 'is', null),
          eb('last_success_at', '<', staleBefore),
        ]),
      )
      .execute();
  },

  /** After a failure: starts the failure run if none is running; returns when it started. */
  async recordFailure(db: Db, businessId: string, id: string, at: string): Promise<string | null> {
    const row = await db
      .updateTable('webhooks')
      .set((eb) => ({ first_failure_at: eb.fn.coalesce('first_failure_at', eb.val(at)) }))
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning('first_failure_at')
      .executeTakeFirst();
    return row?.first_failure_at ?? null;
  },

  async disable(db: Db, businessId: string, id: string, reason: string, at: string): Promise<void> {
    await db
      .updateTable('webhooks')
      .set({ enabled: false, disabled_reason: reason, disabled_at: at, updated_at: at })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('enabled', '=', true)
      .execute();
  },
};
