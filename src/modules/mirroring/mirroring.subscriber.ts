import { enqueueJobs } from '../../jobs/outbox.worker.ts';
import type { ChannelsService } from '../channels/channels.service.ts';
import type { DomainEvent, Subscriber } from '../domain-events/domain-events.types.ts';
import { MIRROR_JOB } from './mirror.job.ts';

/** The subscriber's name: its position is stored under it. */
export const MIRRORING_SUBSCRIBER = 'mirroring';

/** A message a contact wrote, which a helpdesk mirroring the business's channels shows. */
const fromContact = (event: DomainEvent) =>
  event.type === 'message_created' &&
  event.conversationId !== null &&
  event.data.direction === 'inbound' &&
  event.data.sender_type === 'contact';

/**
 * Mirrors the customers' messages: for each one, in a business with a channel that mirrors the
 * others (ChannelCapabilities.mirrors), a `mirror` job in the transaction that hands the event over,
 * so a message stored is copied even when the process stops right after.
 */
export function mirroringSubscriber(deps: { channels: ChannelsService; wake: () => void }): Subscriber {
  return {
    name: MIRRORING_SUBSCRIBER,
    types: ['message_created'],
    async handle(batch, trx) {
      const byBusiness = new Map<string, string[]>();
      for (const event of batch.filter(fromContact))
        byBusiness.set(event.businessId, [...(byBusiness.get(event.businessId) ?? []), event.subjectId]);
      let queued = 0;
      for (const [businessId, ids] of byBusiness) {
        if ((await deps.channels.mirroring(businessId, trx)).length === 0) continue;
        await enqueueJobs(
          trx,
          ids.map((refId) => ({ businessId, kind: MIRROR_JOB, refId })),
        );
        queued += ids.length;
      }
      return queued > 0 ? deps.wake : undefined;
    },
  };
}
