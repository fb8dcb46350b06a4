import type { Db } from '../../db/database.ts';
import { enqueueJob, type JobHandler, type OutboxWorker } from '../../jobs/outbox.worker.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { contactIdentitiesRepository } from '../contacts/contact-identities.repository.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import { contactFieldChanged } from '../events/events.writer.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { CONTACT_MERGE_MOVE_JOB, contactMergeMoveJobHandler, type MoveLog } from './contact-merge.job.ts';
import { planMerge } from './contact-merge.rules.ts';
import { contactMergeRepository as repo } from './contact-merge.repository.ts';
import type { MergeBody } from './contact-merge.schemas.ts';

export class ContactMergeService {
  constructor(
    private readonly db: Db,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
    private readonly worker: Pick<OutboxWorker, 'wake'>,
    /** Messages and events one transaction of the move carries (src/db/slices.ts, mergeRows). */
    private readonly sliceRows: number,
  ) {}

  /**
   * Merges the loser into the survivor, in two steps (docs/ARCHITECTURE.md#contact-merges). The
   * decision is one short transaction: the survivor takes the loser's values where the rules say,
   * the loser's conversations, aliases and identities become the survivor's, its email and phone
   * become aliases, one contact_field_changed event records what changed (by the public API, or by
   * the dashboard user who merged), and the loser is hidden into the survivor: gone for every reader
   * at once, its messages and events read as the survivor's. Then the job `contact_merge_move` moves
   * those a slice at a time and deletes the loser.
   */
  async merge(
    businessId: string,
    body: MergeBody,
    actor: { actorType: 'api' | 'human'; userId?: string | null } = { actorType: 'api' },
  ): Promise<{ success: true; survivor_id: string }> {
    const { survivor_id: survivorId, loser_id: loserId } = body;
    if (survivorId.toLowerCase() === loserId.toLowerCase())
      throw invalid('survivor_id and loser_id must be two different contacts');

    await this.db.transaction().execute(async (trx) => {
      const rows = await contactsRepository.lockForMerge(trx, businessId, [survivorId, loserId]);
      const survivor = rows.find((r) => r.id === survivorId.toLowerCase());
      const loser = rows.find((r) => r.id === loserId.toLowerCase());
      if (!survivor) throw notFound('survivor contact');
      if (!loser) throw notFound('loser contact');
      if (survivor.is_test !== loser.is_test) throw invalid('a test contact cannot be merged with a real one');

      const loserAssignee =
        survivor.assigned_user_id === null && loser.assigned_user_id !== null
          ? await repo.userEmail(trx, businessId, loser.assigned_user_id)
          : null;
      const plan = planMerge(survivor, loser, body.field_choices ?? {}, loserAssignee);
      // external_id is unique per business: the loser, which stays hidden until its history has
      // moved, lets go of it before the survivor takes it or another contact is given it.
      if (loser.external_id !== null) await contactsRepository.update(trx, businessId, loser.id, { external_id: null });
      await contactsRepository.update(trx, businessId, survivor.id, plan.patch);
      await conversationOpsRepository.moveToContact(
        trx,
        businessId,
        loser.id,
        survivor.id,
        plan.patch.tags ?? survivor.tags,
      );
      await contactsRepository.copyAliases(trx, businessId, loser.id, survivor.id);
      await contactsRepository.addAliases(trx, businessId, survivor.id, plan.aliases);
      // The loser's addresses name the survivor: those without a column (a page-scoped id) move;
      // its phones and emails are settled again as it is hidden.
      await contactIdentitiesRepository.move(trx, businessId, loser.id, survivor.id);
      await contactFieldChanged(trx, businessId, {
        contactId: survivor.id,
        actorType: actor.actorType,
        userId: actor.userId,
        source: 'merge',
        changes: plan.changes,
      });
      await contactsRepository.hide(trx, businessId, loser.id, survivor.id);
      await contactsChanged(trx, businessId, [survivor.id, loser.id], 'merged', {
        survivor_id: survivor.id,
        loser_id: loser.id,
      });
      await enqueueJob(trx, { businessId, kind: CONTACT_MERGE_MOVE_JOB, refId: loser.id });
    });
    this.worker.wake(CONTACT_MERGE_MOVE_JOB);
    // Handed over before the answer: open dashboards hear of the merge at once.
    await this.domainEvents.dispatch(['contact_changed']);
    return { success: true, survivor_id: survivorId.toLowerCase() };
  }

  /** The handler of the merges' second step, for the outbox worker; `log` hears of each move's end. */
  moveJobHandler(log?: MoveLog): JobHandler {
    return contactMergeMoveJobHandler(this.db, this.sliceRows, log);
  }
}
