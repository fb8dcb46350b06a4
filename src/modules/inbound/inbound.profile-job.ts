import type { Db } from '../../db/database.ts';
import { outboxRepository } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler } from '../../jobs/outbox.worker.ts';
import type { ChannelsService } from '../channels/channels.service.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { takeProfileName, wouldTakeProfileName } from './inbound.contacts.ts';

/** The outbox kind of sender profile lookups; `ref_id` is the first message of a new contact. */
export const SENDER_PROFILE_JOB = 'sender_profile';

/** 3 tries: a name is worth a retry, not hours of them. */
const tries = repeatableTries(3);

/**
 * Names a contact that an inbound message created, from the provider's profile of its sender, for
 * providers whose notifications carry no name (ChannelCapabilities.senderProfiles). Best effort and
 * after the message is stored: a contact named meanwhile (by the API, say) keeps its name, and a
 * provider that fails or names nobody changes nothing.
 */
export function senderProfileJobHandler(db: Db, channels: ChannelsService): JobHandler {
  return {
    kind: SENDER_PROFILE_JOB,
    concurrency: 4,
    leaseSeconds: 60,
    onAbandoned: tries.onAbandoned,
    async handle(job) {
      const businessId = job.business_id;
      const message = await messagesRepository.personOf(db, businessId, job.ref_id);
      if (!message?.contact_id || !message.channel_id || !message.address) return { done: true };
      const channel = await channels.find(businessId, message.channel_id);
      const provider = channel?.provider_kind ? channels.providerFor(channel) : undefined;
      if (!channel || !provider?.fetchProfile) return { done: true };
      let name: string;
      try {
        const profile = await provider.fetchProfile(message.address);
        if (!profile) return { done: true };
        name = `${profile.firstName} ${profile.lastName}`.trim();
      } catch (err) {
        const failure = provider.classifyError(err);
        return tries.afterFailure(job, failure.retryable, `${failure.code}: ${failure.detail}`);
      }
      const contactId = message.contact_id;
      await db.transaction().execute(async (trx) => {
        // Row-locked, as the API's updates lock it: a name given meanwhile is seen and kept.
        const contact = await contactsRepository.findForUpdate(trx, businessId, contactId);
        if (contact && wouldTakeProfileName(contact, name)) {
          await takeProfileName(trx, channel, contact, name);
          await contactsChanged(trx, businessId, [contactId], 'updated');
        }
        await outboxRepository.complete(trx, job);
      });
      return { done: true, recorded: true };
    },
  };
}
