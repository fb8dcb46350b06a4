import type { Db } from '../../src/db/database.ts';
import { CONTACT_MERGE_MOVE_JOB } from '../../src/modules/contact-merge/contact-merge.job.ts';

/** The merges whose second step (the move of the loser's history) has not ended. */
export async function movesLeft(db: Db): Promise<number> {
  const row = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('kind', '=', CONTACT_MERGE_MOVE_JOB)
    .where('state', 'in', ['pending', 'running'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Waits until every merge's move has ended (the app's worker runs them): a test that reads the
 * tables themselves, rather than through the API, sees the history under the survivor then.
 */
export async function movesEnded(db: Db, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while ((await movesLeft(db)) > 0) {
    if (Date.now() > end) throw new Error('a merge move did not end');
    await new Promise((r) => setTimeout(r, 10));
  }
}
