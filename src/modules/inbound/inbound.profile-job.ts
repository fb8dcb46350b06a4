import type { ChannelProvider, FetchedProfile } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import { repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import type { ChannelsService } from '../channels/channels.service.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { AVATAR_MAX_BYTES, AvatarRefused, type AvatarStore, type StoredAvatar } from '../media/media.avatars.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { takeProfile, wouldTakeAvatar, wouldTakeProfileName } from './inbound.contacts.ts';

/** The outbox kind of sender profile lookups; `ref_id` is the first message of a new contact. */
export const SENDER_PROFILE_JOB = 'sender_profile';

/** 3 tries: a name is worth a retry, not hours of them. */
const tries = repeatableTries(3);

/** The picture's download: stored, or why not (a retryable failure brings the job back). */
type AvatarFetch = { stored?: StoredAvatar; retry?: string };

/**
 * Names a contact that an inbound message created, and gives it the picture of the profile, from
 * the provider's profile of its sender, for providers whose notifications carry no name
 * (ChannelCapabilities.senderProfiles). Best effort and after the message is stored: a contact
 * named or given a picture meanwhile (by the API, say) keeps it, and a provider that fails or names
 * nobody changes nothing. The picture is copied into the file store (the provider's URL expires):
 * one that is no image, too large or gone is left out for good; one whose download failed for a
 * passing reason brings the job back, and the name found meanwhile is kept.
 */
export function senderProfileJobHandler(db: Db, channels: ChannelsService, avatars: AvatarStore): JobHandler {
  async function fetchAvatar(
    provider: ChannelProvider,
    businessId: string,
    contactId: string,
    profile: FetchedProfile,
  ): Promise<AvatarFetch> {
    if (!profile.avatar || !provider.fetchAvatar) return {};
    const contact = await contactsRepository.find(db, businessId, contactId);
    if (!contact || !wouldTakeAvatar(contact)) return {};
    let fetched;
    try {
      fetched = await provider.fetchAvatar(profile.avatar, { maxBytes: AVATAR_MAX_BYTES });
    } catch (err) {
      const failure = provider.classifyError(err);
      return failure.retryable ? { retry: `${failure.code}: ${failure.detail}` } : {};
    }
    try {
      return { stored: await avatars.store(businessId, fetched) };
    } catch (err) {
      // A refused picture is final; a failure of the file store is ours and passes.
      return err instanceof AvatarRefused ? {} : { retry: `storing the profile picture: ${(err as Error).message}` };
    }
  }

  async function handle(job: OutboxJob): Promise<JobOutcome> {
    const businessId = job.business_id;
    const message = await messagesRepository.personOf(db, businessId, job.ref_id);
    if (!message?.contact_id || !message.channel_id || !message.address) return { done: true };
    const channel = await channels.find(businessId, message.channel_id);
    const provider = channel?.provider_kind ? channels.providerFor(channel) : undefined;
    if (!channel || !provider?.fetchProfile) return { done: true };
    let profile: FetchedProfile | null;
    try {
      profile = await provider.fetchProfile(message.address);
    } catch (err) {
      const failure = provider.classifyError(err);
      return tries.afterFailure(job, failure.retryable, `${failure.code}: ${failure.detail}`);
    }
    if (!profile) return { done: true };
    const name = `${profile.firstName} ${profile.lastName}`.trim();
    const contactId = message.contact_id;
    const avatar = await fetchAvatar(provider, businessId, contactId, profile);
    const outcome: JobOutcome = avatar.retry ? tries.afterFailure(job, true, avatar.retry) : { done: true };
    let taken = false;
    try {
      taken = await db.transaction().execute(async (trx) => {
        // Row-locked, as the API's updates lock it: a name or picture given meanwhile is seen and kept.
        const contact = await contactsRepository.findForUpdate(trx, businessId, contactId);
        const avatarUrl = contact && avatar.stored && wouldTakeAvatar(contact) ? avatar.stored.url : undefined;
        if (contact && (wouldTakeProfileName(contact, name) || avatarUrl)) {
          await takeProfile(trx, channel, contact, { name, avatarUrl });
          await contactsChanged(trx, businessId, [contactId], 'updated');
        }
        if ('retryInSeconds' in outcome)
          await outboxRepository.retryAt(trx, job, outcome.retryInSeconds, outcome.error);
        else if ('failed' in outcome) await outboxRepository.fail(trx, job, outcome.failed);
        else await outboxRepository.complete(trx, job);
        return avatarUrl !== undefined;
      });
    } finally {
      // A picture no contact took (one was given meanwhile, or the commit failed) is not kept.
      if (avatar.stored && !taken) await avatars.discard(avatar.stored).catch(() => undefined);
    }
    return { ...outcome, recorded: true };
  }

  return {
    kind: SENDER_PROFILE_JOB,
    concurrency: 4,
    leaseSeconds: 60,
    onAbandoned: tries.onAbandoned,
    handle,
  };
}
