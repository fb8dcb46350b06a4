import { enqueueJobs } from '../../jobs/outbox.worker.ts';
import type { ChannelsService } from '../channels/channels.service.ts';
import type { DomainEvent, Subscriber } from '../domain-events/domain-events.types.ts';
import { MIRROR_JOB } from './mirror.job.ts';
import { mirroringRepository } from './mirroring.repository.ts';
import { RELAY_STATUS_JOB } from './relay-status.job.ts';

/** The subscriber's name: its position is stored under it. */
export const MIRRORING_SUBSCRIBER = 'mirroring';

/** A message a contact wrote, which a helpdesk mirroring the business's channels shows. */
const fromContact = (event: DomainEvent) =>
  event.type === 'message_created' &&
  event.conversationId !== null &&
  event.data.direction === 'inbound' &&
  event.data.sender_type === 'contact';

/** A send that ended (SENT or ERROR) of a person's: a relayed reply among them is reported. */
const sendEnded = (event: DomainEvent) =>
  event.type === 'message_status_changed' &&
  event.data.direction === 'outbound' &&
  event.data.sender_type === 'human' &&
  (event.data.status === 'SENT' || event.data.status === 'ERROR');

/**
 * Mirrors the customers' messages: for each one, in a business with a channel that mirrors the
 * others (ChannelCapabilities.mirrors), a `mirror` job in the transaction that hands the event over,
 * so a message stored is copied even when the process stops right after. The end of a
 * relayed reply's send (SENT or ERROR) is reported to the provider that relayed it, by a
 * `relay_status` job written the same way.
 */
export function mirroringSubscriber(deps: { channels: ChannelsService; wake: (kind: string) => void }): Subscriber {
  return {
    name: MIRRORING_SUBSCRIBER,
    types: ['message_created', 'message_status_changed'],
    async handle(batch, trx) {
      const ended = new Map<string, Set<string>>();
      for (const event of batch.filter(sendEnded))
        ended.set(event.businessId, (ended.get(event.businessId) ?? new Set()).add(event.subjectId));
      let reports = 0;
      for (const [businessId, ids] of ended) {
        const relayed = await mirroringRepository.relayedAmong(trx, businessId, [...ids]);
        await enqueueJobs(
          trx,
          relayed.map((refId) => ({ businessId, kind: RELAY_STATUS_JOB, refId })),
        );
        reports += relayed.length;
      }
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
      if (queued === 0 && reports === 0) return undefined;
      return () => {
        if (queued > 0) deps.wake(MIRROR_JOB);
        if (reports > 0) deps.wake(RELAY_STATUS_JOB);
      };
    },
  };
}
