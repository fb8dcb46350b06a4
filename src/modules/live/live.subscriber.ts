import type { Engine } from '../../db/database.ts';
import { DOMAIN_EVENT_TYPES, type Subscriber } from '../domain-events/domain-events.types.ts';
import { announcements, liveEvent, type LiveEvent } from './live.events.ts';
import type { LiveHub } from './live.hub.ts';
import { liveRepository } from './live.repository.ts';

/** The subscriber's name (its position in domain_event_pending). */
export const LIVE_SUBSCRIBER = 'live-stream';

/**
 * Every domain event, announced to the open dashboards of its business. On PostgreSQL the batch is
 * announced with NOTIFY in the transaction that hands it over: sent at its commit to every server
 * process's listener (this one's too), each hub forwarding to its streams. On the embedded engine
 * there is one process: the batch goes to its hub after the commit.
 */
export function liveStreamSubscriber(hub: Pick<LiveHub, 'publish'>, engine: Engine): Subscriber {
  return {
    name: LIVE_SUBSCRIBER,
    types: DOMAIN_EVENT_TYPES,
    async handle(batch, trx) {
      if (engine === 'postgres') {
        await liveRepository.announce(trx, announcements(batch));
        return;
      }
      const byBusiness = new Map<string, LiveEvent[]>();
      for (const event of batch) {
        const list = byBusiness.get(event.businessId) ?? [];
        list.push(liveEvent(event));
        byBusiness.set(event.businessId, list);
      }
      return () => {
        for (const [businessId, events] of byBusiness) hub.publish(businessId, events);
      };
    },
  };
}
