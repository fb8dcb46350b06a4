import type { Db } from '../../db/database.ts';
import { nextTurn } from '../../db/slices.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import { retryDelaySeconds, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { eventsRepository } from '../events/events.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';

/** The outbox kind of a merge's second step; `ref_id` is the hidden loser's id. */
export const CONTACT_MERGE_MOVE_JOB = 'contact_merge_move';

const LEASE_SECONDS = 120;

/** Where the end of a move is told: its rows and time (this run's, after a restart). */
export interface MoveLog {
  info(obj: object, msg: string): void;
}

/**
 * Moves the messages and events of a contact a merge hid to its survivor, `sliceRows` of them per
 * transaction, and deletes the contact in the transaction that finds none left, which also ends the
 * job. Each slice reads the survivor again (a later merge may have hidden that one too, and
 * repointed this contact), takes its turn of the event loop first (src/db/slices.ts: on the embedded
 * engine a slice holds the only connection), and commits on its own, so requests get in between.
 *
 * Every slice is idempotent: it moves whatever rows the contact still has, under the contact's row
 * lock. So a crash or a lost lease costs nothing but a run again from where the rows are, never a
 * row lost or moved twice; the lease is renewed as the job goes, and should a second runner start
 * all the same (a worker stalled past its lease), the two take turns on that lock, harmlessly.
 */
export function contactMergeMoveJobHandler(db: Db, sliceRows: number, log?: MoveLog): JobHandler {
  /** One slice: the rows it moved, and whether the contact is gone (deleted here, or before) and the job ended. */
  function slice(job: OutboxJob): Promise<{ moved: number; done: boolean }> {
    const { business_id: businessId, ref_id: hiddenId } = job;
    return db.transaction().execute(async (trx) => {
      const survivorId = await contactsRepository.lockMerged(trx, businessId, hiddenId);
      let moved = 0;
      if (survivorId !== undefined) {
        moved = await messagesRepository.moveToContact(trx, businessId, hiddenId, survivorId, sliceRows);
        if (moved < sliceRows)
          moved += await eventsRepository.moveToContact(trx, businessId, hiddenId, survivorId, sliceRows - moved);
        if (moved === sliceRows) return { moved, done: false };
        await contactsRepository.removeMerged(trx, businessId, hiddenId);
      }
      await outboxRepository.complete(trx, job);
      return { moved, done: true };
    });
  }

  async function handle(job: OutboxJob, stopping?: AbortSignal): Promise<JobOutcome> {
    const started = Date.now();
    let leased = started;
    let rows = 0;
    try {
      for (;;) {
        // A stopping server ends the job between two slices; the next start goes on from there.
        if (stopping?.aborted) return { interrupted: true };
        await nextTurn();
        const { moved, done } = await slice(job);
        rows += moved;
        if (done) {
          log?.info(
            { businessId: job.business_id, contactId: job.ref_id, rows, ms: Date.now() - started },
            'merged contact: history moved to the survivor',
          );
          return { done: true, recorded: true };
        }
        if (Date.now() - leased > (LEASE_SECONDS * 1000) / 4) {
          // Taken over (this worker stalled past its lease): the runner that holds it now goes on.
          const held = await outboxRepository.extendLease(db, job, LEASE_SECONDS);
          if (!held) return { interrupted: true, recorded: true };
          leased = Date.now();
        }
      }
    } catch (err) {
      // Never given up: until the move ends, the readers show the rows under the survivor anyway.
      return { retryInSeconds: retryDelaySeconds(job.attempts), error: (err as Error).message };
    }
  }

  return {
    kind: CONTACT_MERGE_MOVE_JOB,
    concurrency: 2,
    leaseSeconds: LEASE_SECONDS,
    handle,
    onAbandoned: async () => 'retry',
  };
}
