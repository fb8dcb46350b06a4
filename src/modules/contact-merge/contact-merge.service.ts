import type { Db } from '../../db/database.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { contactIdentitiesRepository } from '../contacts/contact-identities.repository.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { contactFieldChanged } from '../events/events.writer.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { planMerge } from './contact-merge.rules.ts';
import { contactMergeRepository as repo } from './contact-merge.repository.ts';
import type { MergeBody } from './contact-merge.schemas.ts';

export class ContactMergeService {
  constructor(
    private readonly db: Db,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  /**
   * Merges the loser into the survivor in one transaction: history, aliases and identities move, the
   * survivor takes the loser's values where the rules say, the loser's email and phone become
   * aliases, one contact_field_changed event records what changed (by the public API, or by the
   * dashboard user who merged), and the loser is deleted.
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
      const rows = await repo.lockPair(trx, businessId, [survivorId, loserId]);
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
      // external_id is unique per business: the loser lets go of it before the survivor takes it.
      if (plan.patch.external_id !== undefined)
        await contactsRepository.update(trx, businessId, loser.id, { external_id: null });
      await contactsRepository.update(trx, businessId, survivor.id, plan.patch);
      await repo.moveHistory(trx, businessId, loser.id, survivor.id);
      await repo.syncConversationTags(trx, businessId, survivor.id, plan.patch.tags ?? survivor.tags);
      await contactsRepository.copyAliases(trx, businessId, loser.id, survivor.id);
      await contactsRepository.addAliases(trx, businessId, survivor.id, plan.aliases);
      // The loser's addresses name the survivor: those without a column (a page-scoped id) would
      // otherwise go with it; its phones and emails are settled again as it is deleted.
      await contactIdentitiesRepository.move(trx, businessId, loser.id, survivor.id);
      await contactFieldChanged(trx, businessId, {
        contactId: survivor.id,
        actorType: actor.actorType,
        userId: actor.userId,
        source: 'merge',
        changes: plan.changes,
      });
      await contactsRepository.remove(trx, businessId, loser.id);
      await contactsChanged(trx, businessId, [survivor.id, loser.id], 'merged', {
        survivor_id: survivor.id,
        loser_id: loser.id,
      });
    });
    // Handed over before the answer: open dashboards hear of the merge at once.
    await this.domainEvents.dispatch(['contact_changed']);
    return { success: true, survivor_id: survivorId.toLowerCase() };
  }
}
