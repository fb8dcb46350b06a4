import type { Subscriber } from '../domain-events/domain-events.types.ts';
import type { WebhookEvents } from './webhook-events.ts';

/** The subscriber's name, also registered by migration 0015 so that no event precedes it. */
export const WEBHOOK_SUBSCRIBER = 'webhooks';

/**
 * `message_created` webhook deliveries from `message_created` domain events: per business, the
 * messages in event order (their order per conversation), written with WebhookEvents.messagesCreated
 * in the transaction that moves the subscriber's position, so each event gives its deliveries once.
 * Which webhooks are enabled, and the payload, are read when the event is handed over, as a rule
 * just after its commit (the request that wrote it waits for that).
 */
export function webhookDeliveriesSubscriber(events: Pick<WebhookEvents, 'messagesCreated' | 'wake'>): Subscriber {
  return {
    name: WEBHOOK_SUBSCRIBER,
    types: ['message_created'],
    async handle(batch, trx) {
      const byBusiness = new Map<string, string[]>();
      for (const event of batch) {
        const ids = byBusiness.get(event.businessId) ?? [];
        ids.push(event.subjectId);
        byBusiness.set(event.businessId, ids);
      }
      let queued = false;
      for (const [businessId, ids] of byBusiness) {
        if (await events.messagesCreated(trx, businessId, ids)) queued = true;
      }
      return queued ? () => events.wake() : undefined;
    },
  };
}
