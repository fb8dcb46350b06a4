import { channelKind } from '../../channels/registry.ts';
import { scheduleJobs } from '../../jobs/outbox.worker.ts';
import type { Clock } from '../../lib/clock.ts';
import { activationRefusal, debounceSeconds } from '../agents/activation-rules.ts';
import type { DomainEvent, Subscriber } from '../domain-events/domain-events.types.ts';
import { AI_RUN_JOB } from './ai-run.job.ts';
import { aiRunsRepository } from './ai-runs.repository.ts';

/** The subscriber's name, also registered by migration 0031 so that no message precedes it. */
export const AI_RUN_SUBSCRIBER = 'ai_agent';

/**
 * A message a contact wrote (not one the business sent, nor an import, nor a machine's answer on their
 * behalf), while no other app held the conversation (a message on Meta's standby: the app in control
 * answers it).
 */
const fromContact = (event: DomainEvent) =>
  event.type === 'message_created' &&
  event.conversationId !== null &&
  event.data.direction === 'inbound' &&
  event.data.sender_type === 'contact' &&
  event.data.automated !== true &&
  event.data.handed_over !== true;

/**
 * Starts the AI agent's runs: for each conversation an inbound message landed in, whose agent
 * answers (an agent assigned, no manual control, its activation rules pass), schedules the
 * conversation's one waiting `ai_run` job after the agent's debounce, in the transaction that hands
 * the events over; a message that arrives while it waits pushes it later, so messages sent in a
 * burst are answered together. Without a model configured (LLM_URL), none starts; nor on a channel
 * that only receives (a phone call's message), where no reply can go.
 */
export function aiRunSubscriber(deps: { llmConfigured: boolean; clock: Clock; wake: () => void }): Subscriber {
  return {
    name: AI_RUN_SUBSCRIBER,
    types: ['message_created'],
    async handle(batch, trx) {
      if (!deps.llmConfigured) return;
      const byBusiness = new Map<string, Set<string>>();
      for (const event of batch.filter(fromContact)) {
        const ids = byBusiness.get(event.businessId) ?? new Set<string>();
        ids.add(event.conversationId!);
        byBusiness.set(event.businessId, ids);
      }
      let scheduled = 0;
      const now = deps.clock.now();
      for (const [businessId, ids] of byBusiness) {
        const candidates = await aiRunsRepository.answerCandidates(trx, businessId, [...ids]);
        const jobs = candidates
          .filter(
            (c) =>
              !c.manual_control &&
              // A channel that only receives (phone calls) carries no reply.
              !channelKind(c.provider_kind)?.capabilities.receiveOnly &&
              activationRefusal(c.activation_rules, { channelId: c.channel_id, tags: c.tags, now }) === null,
          )
          .map((c) => ({ businessId, refId: c.conversation_id, delaySeconds: debounceSeconds(c.activation_rules) }));
        await scheduleJobs(trx, AI_RUN_JOB, jobs);
        scheduled += jobs.length;
      }
      return scheduled > 0 ? deps.wake : undefined;
    },
  };
}
