import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { sessionAlive } from '../../jobs/worker-session.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../../db/types.ts';

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;
/** An attempt as the log shows it: with its delivery's next attempt, when one is pending after it. */
export type LoggedAttempt = AttemptRow & { next_attempt_at: string | null };

/** A claimed delivery with what sending it needs from its webhook. */
export interface ClaimedDelivery {
  business_id: string;
  id: string;
  webhook_id: string;
  message_id: string | null;
  conversation_id: string | null;
  event: string;
  payload: Record<string, unknown>;
  /** Counting this claim. */
  attempts: number;
  schedule_base: number;
  url: string;
  method: 'POST' | 'PUT';
  /** Values sealed, or plain text while `headers_sealed` is false; the worker opens them to send. */
  headers: Record<string, string>;
  headers_sealed: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
}

/** How a claimed delivery ends; `attempts` guards against a worker whose lease ran out meanwhile. */
export type DeliveryEnd =
  | { state: 'delivered' }
  | { state: 'failed'; error: string }
  | { state: 'pending'; error: string; nextAttemptAt: string; scheduleBase?: number };

/** The deliveries of one webhook and conversation: they go out one at a time, in order (seq). */
interface Queue {
  business_id: string;
  webhook_id: string;
  conversation_id: string;
}

const QUEUE_COLUMNS = { business_id: 'uuid', webhook_id: 'uuid', conversation_id: 'uuid' } as const;
const queueKey = (q: Queue) => `${q.business_id}/${q.webhook_id}/${q.conversation_id}`;

function queuesOf(
  rows: readonly { business_id: string; webhook_id: string; conversation_id?: string | null }[],
): Queue[] {
  const queues = new Map<string, Queue>();
  for (const { business_id, webhook_id, conversation_id } of rows) {
    if (!conversation_id) continue;
    const queue = { business_id, webhook_id, conversation_id };
    queues.set(queueKey(queue), queue);
  }
  // Sorted: the heads are locked in this order (insertMany), the one lockForEnd takes too.
  return [...queues.values()].sort((a, b) => (queueKey(a) < queueKey(b) ? -1 : 1));
}

/** The first pending or running delivery of the queue `q` (index webhook_deliveries_order), locked as `lock` says. */
const headOfQueue = (lock = sql``) => sql`(select e.business_id, e.id from webhook_deliveries e
  where e.business_id = q.business_id and e.webhook_id = q.webhook_id and e.conversation_id = q.conversation_id
    and e.state in ('pending', 'running')
  order by e.seq limit 1 ${lock})`;

/**
 * All SQL of deliveries (the webhook outbox) and their attempt log.
 *
 * Only the first pending or running delivery of a queue may go out; the others are `held`, so the
 * claim's index (webhook_deliveries_due_heads) leaves them out however long the backlog behind a
 * failing endpoint grows. A delivery is held when it is queued behind another, and the next one is
 * released when the one before it is delivered or given up, in the same transaction. The two meet
 * on the queue's first delivery: queuing locks it FOR SHARE, ending it locks it FOR UPDATE, so one
 * waits for the other and the release, a statement after the end, sees what was queued. Both lock
 * in the order of (business, webhook, conversation), so they cannot deadlock. Should a delivery
 * still be held with nothing before it, the worker releases it within 30 s (releaseStranded); held
 * or not, the claim sends a delivery only when none is pending or running before it.
 */
export const webhookDeliveriesRepository = {
  /**
   * Queues deliveries, each held when its queue has a pending or running one before it (whose lock
   * this transaction keeps until it ends: see above). A first delivery ending meanwhile is waited
   * for, and then not found: the new one is not held.
   */
  async insertMany(db: Db, rows: Insertable<WebhookDeliveriesTable>[]): Promise<void> {
    if (rows.length === 0) return;
    const queues = queuesOf(rows);
    const busy = new Set<string>();
    if (queues.length > 0) {
      const { rows: heads } = await sql<Queue>`select q.business_id, q.webhook_id, q.conversation_id
        from ${jsonRows('q', QUEUE_COLUMNS, queues)}
        cross join lateral ${headOfQueue(sql`for share of e`)} h`.execute(db);
      for (const head of heads) busy.add(queueKey(head));
    }
    const values = rows.map((r) => {
      const queue = r.conversation_id ? queueKey(r as Queue) : null;
      const held = queue !== null && busy.has(queue);
      if (queue !== null) busy.add(queue);
      return { ...r, payload: JSON.stringify(r.payload), held };
    });
    await db.insertInto('webhook_deliveries').values(values).execute();
  },

  /** Releases the delivery now first in each queue, after the one before it was delivered or given up. */
  async releaseNext(
    db: Db,
    ended: readonly { business_id: string; webhook_id: string; conversation_id: string | null }[],
  ): Promise<void> {
    const queues = queuesOf(ended);
    if (queues.length === 0) return;
    await sql`update webhook_deliveries d set held = false
      from ${jsonRows('q', QUEUE_COLUMNS, queues)}
      cross join lateral ${headOfQueue()} h
      where d.business_id = h.business_id and d.id = h.id and d.held`.execute(db);
  },

  /** Locks claimed deliveries before their attempts are recorded, in the order insertMany locks (see above). */
  async lockForEnd(db: Db, claims: readonly ClaimedDelivery[]): Promise<void> {
    if (claims.length === 0) return;
    const keys = sql.join(claims.map((c) => sql`(${c.business_id}::uuid, ${c.id}::uuid)`));
    await sql`select 1 from webhook_deliveries where (business_id, id) in (${keys})
      order by business_id, webhook_id, conversation_id, seq for update`.execute(db);
  },

  /**
   * Releases the held deliveries that head their queue (the one before them ended in a transaction
   * that did not see them); how many. Reads the index webhook_deliveries_order, one entry per
   * pending or running delivery: run now and then, not at every claim.
   */
  async releaseStranded(db: Db): Promise<number> {
    const result = await sql`update webhook_deliveries d set held = false
      from (select distinct on (business_id, webhook_id, conversation_id) business_id, id, held
        from webhook_deliveries where state in ('pending', 'running') and conversation_id is not null
        order by business_id, webhook_id, conversation_id, seq) h
      where h.held and d.business_id = h.business_id and d.id = h.id`.execute(db);
    return Number(result.numAffectedRows ?? 0n);
  },

  /**
   * Claims up to `limit` due deliveries of enabled webhooks (and those whose worker's lease ran out:
   * a crash), SKIP LOCKED so processes share the work, under this process's worker session `owner`.
   * A delivery is held back while an earlier one (by seq) of the same webhook and conversation is
   * still pending or running: per-conversation order.
   */
  async claim(
    db: Db,
    now: string,
    leaseUntil: string,
    limit: number,
    owner: number | null = null,
  ): Promise<ClaimedDelivery[]> {
    const { rows } = await sql<ClaimedDelivery>`
      UPDATE webhook_deliveries AS d
      SET state = 'running', attempts = d.attempts + 1, locked_until = ${leaseUntil}, locked_by = ${owner},
        updated_at = ${now}
      FROM webhooks AS w
      WHERE w.business_id = d.business_id AND w.id = d.webhook_id
        AND (d.business_id, d.id) IN (
          SELECT c.business_id, c.id
          FROM webhook_deliveries AS c
          JOIN webhooks AS cw ON cw.business_id = c.business_id AND cw.id = c.webhook_id AND cw.enabled
          WHERE ((c.state = 'pending' AND NOT c.held AND c.next_attempt_at <= ${now}) OR (c.state = 'running' AND c.locked_until < ${now}))
            AND NOT EXISTS (
              SELECT 1 FROM webhook_deliveries AS e
              WHERE e.business_id = c.business_id AND e.webhook_id = c.webhook_id
                AND e.conversation_id = c.conversation_id AND e.seq < c.seq
                AND e.state IN ('pending', 'running'))
          ORDER BY c.next_attempt_at
          LIMIT ${limit}
          FOR UPDATE OF c SKIP LOCKED)
      RETURNING d.business_id, d.id, d.webhook_id, d.message_id, d.conversation_id, d.event, d.payload, d.attempts, d.schedule_base,
        w.url, w.method, w.headers, w.headers_sealed, w.secret, w.previous_secret, w.previous_secret_expires_at`.execute(
      db,
    );
    return rows;
  },

  /**
   * Ends now the leases of running deliveries whose worker session ended (a process killed or cut
   * off), so the next claim sends them again at once instead of when their leases run out; how many.
   * A sweep rather than a part of every claim: reading pg_locks for each running delivery at every
   * claim would cost more than the claim.
   */
  async endLeasesOfEndedSessions(db: Db): Promise<number> {
    const result = await db
      .updateTable('webhook_deliveries')
      .set({ locked_until: sql<string>`now() - interval '1 second'` })
      .where('state', '=', 'running')
      .where('locked_until', '>=', sql<string>`now()`)
      .where('locked_by', 'is not', null)
      .where(sql<boolean>`not ${sessionAlive(sql.ref('locked_by'))}`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  },

  /** Ends the lease of every running delivery now (restart-recovery.ts); how many. */
  async endLeases(db: Db): Promise<number> {
    const result = await db
      .updateTable('webhook_deliveries')
      .set({ locked_until: sql<string>`now() - interval '1 second'` })
      .where('state', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  },

  /** Ends a claim; false when the claim was no longer this worker's (its lease ran out and another took it). */
  async finish(db: Db, delivery: ClaimedDelivery, end: DeliveryEnd, now: string): Promise<boolean> {
    const base = { locked_until: null, updated_at: now };
    const set =
      end.state === 'delivered'
        ? { ...base, state: 'delivered' as const, last_error: null }
        : end.state === 'failed'
          ? { ...base, state: 'failed' as const, last_error: end.error }
          : {
              ...base,
              state: 'pending' as const,
              last_error: end.error,
              next_attempt_at: end.nextAttemptAt,
              ...(end.scheduleBase === undefined ? {} : { schedule_base: end.scheduleBase }),
            };
    const result = await db
      .updateTable('webhook_deliveries')
      .set(set)
      .where('business_id', '=', delivery.business_id)
      .where('id', '=', delivery.id)
      .where('state', '=', 'running')
      .where('attempts', '=', delivery.attempts)
      .executeTakeFirst();
    const ended = result.numUpdatedRows > 0n;
    if (ended && end.state !== 'pending') await webhookDeliveriesRepository.releaseNext(db, [delivery]);
    return ended;
  },

  async insertAttempts(db: Db, rows: Insertable<WebhookAttemptsTable>[]): Promise<void> {
    if (rows.length > 0) await db.insertInto('webhook_attempts').values(rows).execute();
  },

  /** Ends many claims as delivered in one statement (claims no longer held are left alone). */
  async markDelivered(db: Db, claims: ClaimedDelivery[], now: string): Promise<void> {
    if (claims.length === 0) return;
    const rows = sql.join(claims.map((c) => sql`(${c.business_id}::uuid, ${c.id}::uuid, ${c.attempts}::int)`));
    await sql`
      UPDATE webhook_deliveries AS d SET state = 'delivered', locked_until = NULL, last_error = NULL, updated_at = ${now}
      FROM (VALUES ${rows}) AS v (business_id, id, attempts)
      WHERE d.business_id = v.business_id AND d.id = v.id AND d.state = 'running' AND d.attempts = v.attempts`.execute(
      db,
    );
    await webhookDeliveriesRepository.releaseNext(db, claims);
  },

  find(db: Db, businessId: string, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
    return db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('webhook_id', '=', webhookId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /**
   * Queues a delivery again now, as a new retry schedule; its id (the webhook-id) stays. Not held:
   * the claim still holds it back while one before it in its queue is pending or running.
   */
  redeliver(db: Db, businessId: string, id: string, now: string): Promise<DeliveryRow | undefined> {
    return db
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        state: 'pending',
        held: false,
        next_attempt_at: now,
        schedule_base: eb.ref('attempts'),
        locked_until: null,
        updated_at: now,
      }))
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('state', '!=', 'running')
      .returningAll()
      .executeTakeFirst();
  },

  /**
   * The attempt log of a webhook, newest first, after the (created_at, id) cursor; each attempt with
   * when its delivery is due again when it is that delivery's latest attempt and a retry is pending.
   */
  attempts(
    db: Db,
    businessId: string,
    webhookId: string,
    limit: number,
    after?: { createdAt: string; id: string },
  ): Promise<LoggedAttempt[]> {
    let query = db
      .selectFrom('webhook_attempts as a')
      .leftJoin('webhook_deliveries as d', (join) =>
        join.onRef('d.business_id', '=', 'a.business_id').onRef('d.id', '=', 'a.delivery_id'),
      )
      .selectAll('a')
      .select(
        sql<string | null>`case when d.state = 'pending' and d.attempts = a.attempt then d.next_attempt_at end`.as(
          'next_attempt_at',
        ),
      )
      .where('a.business_id', '=', businessId)
      .where('a.webhook_id', '=', webhookId);
    if (after) {
      query = query.where(({ eb, refTuple, tuple }) =>
        eb(
          refTuple('a.created_at', 'a.id'),
          '<',
          tuple(sql<string>`${after.createdAt}::timestamptz`, sql<string>`${after.id}::uuid`),
        ),
      );
    }
    return query.orderBy('a.created_at', 'desc').orderBy('a.id', 'desc').limit(limit).execute();
  },

  /**
   * Deletes up to `batch` log rows and finished (delivered or failed) deliveries created before
   * `cutoff`; returns how many. Deliveries still to make (held while their webhook is disabled) stay.
   */
  async deleteOlderThan(db: Db, cutoff: string, batch: number): Promise<number> {
    const attempts = await sql`DELETE FROM webhook_attempts WHERE (business_id, id) IN (
      SELECT business_id, id FROM webhook_attempts WHERE created_at < ${cutoff} LIMIT ${batch})`.execute(db);
    const deliveries = await sql`DELETE FROM webhook_deliveries WHERE (business_id, id) IN (
      SELECT business_id, id FROM webhook_deliveries WHERE created_at < ${cutoff} AND state IN ('delivered', 'failed') LIMIT ${batch})`.execute(
      db,
    );
    return Number(attempts.numAffectedRows ?? 0n) + Number(deliveries.numAffectedRows ?? 0n);
  },
};
