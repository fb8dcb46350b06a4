import { scheduleJobs } from '../../jobs/outbox.worker.ts';
import { followUpSettings, inactivitySettings } from '../agents/timer-settings.ts';
import type { DomainEvent, Subscriber } from '../domain-events/domain-events.types.ts';
import { aiTimersRepository, type TimerCandidate } from './ai-timers.repository.ts';
import { AI_FOLLOW_UP_JOB, AI_INACTIVITY_JOB, AI_MANUAL_CONTROL_JOB, AI_SENTIMENT_JOB } from './timer-jobs.ts';

/** The subscriber's name, also registered by migration 0033 so that no event precedes it. */
export const AI_TIMERS_SUBSCRIBER = 'ai_timers';

type TimerKind =
  typeof AI_SENTIMENT_JOB | typeof AI_FOLLOW_UP_JOB | typeof AI_INACTIVITY_JOB | typeof AI_MANUAL_CONTROL_JOB;

/** What a batch asks of one business's conversations, by conversation id. */
interface Asked {
  /** A message was written (any direction): the quiet timers start again. */
  messages: Set<string>;
  /** The agent wrote (a reply, a follow-up): the follow-up timer starts. */
  agentMessages: Set<string>;
  resolved: Set<string>;
  /** Manual control turned on, or unpinned: its return to the agent counts from then. */
  manualControl: Set<string>;
}

function asked(batch: DomainEvent[]): Map<string, Asked> {
  const byBusiness = new Map<string, Asked>();
  for (const event of batch) {
    if (event.conversationId === null) continue;
    let business = byBusiness.get(event.businessId);
    if (!business) {
      business = { messages: new Set(), agentMessages: new Set(), resolved: new Set(), manualControl: new Set() };
      byBusiness.set(event.businessId, business);
    }
    if (event.type === 'message_created') {
      business.messages.add(event.conversationId);
      if (event.data.sender_type === 'ai_agent') business.agentMessages.add(event.conversationId);
    } else if (event.data.event === 'conversation_resolved') business.resolved.add(event.conversationId);
    else if (event.data.event === 'manual_control_activated' || event.data.event === 'manual_control_unlocked')
      business.manualControl.add(event.conversationId);
  }
  return byBusiness;
}

/**
 * Starts the AI agent's timers (docs/ARCHITECTURE.md#the-ai-agents-timers), in the transaction that
 * hands the events over, for conversations that have an agent: a message moves the conversation's
 * waiting sentiment (AI_SENTIMENT_QUIET_MINUTES) and inactivity jobs later; the agent's message
 * starts the follow-up job; a resolution makes the sentiment job due now; manual control turned on
 * (or unpinned) starts the job that returns it to the agent. Each job decides from the conversation when it runs.
 */
export function aiTimersSubscriber(deps: {
  llmConfigured: boolean;
  sentimentQuietMinutes: number;
  wake: (kind: TimerKind) => void;
}): Subscriber {
  return {
    name: AI_TIMERS_SUBSCRIBER,
    types: ['message_created', 'conversation_changed'],
    async handle(batch, trx) {
      const woken = new Set<TimerKind>();
      for (const [businessId, ask] of asked(batch)) {
        const ids = new Set([...ask.messages, ...ask.resolved, ...ask.manualControl]);
        const candidates = await aiTimersRepository.candidates(trx, businessId, [...ids]);
        const schedule = async (
          kind: TimerKind,
          among: Set<string>,
          delay: (c: TimerCandidate) => number | null,
          keep: 'latest' | 'earliest' = 'latest',
        ) => {
          const jobs = candidates.flatMap((c) => {
            const seconds = among.has(c.conversation_id) ? delay(c) : null;
            return seconds === null ? [] : [{ businessId, refId: c.conversation_id, delaySeconds: seconds }];
          });
          await scheduleJobs(trx, kind, jobs, keep);
          if (jobs.length > 0) woken.add(kind);
        };
        if (deps.llmConfigured) {
          const quiet = deps.sentimentQuietMinutes * 60;
          if (quiet > 0) await schedule(AI_SENTIMENT_JOB, ask.messages, () => quiet);
          // After the quiet period's move: a resolution in the same batch makes the analysis due now.
          await schedule(AI_SENTIMENT_JOB, ask.resolved, () => 0, 'earliest');
        }
        await schedule(AI_FOLLOW_UP_JOB, ask.agentMessages, (c) => {
          const settings = followUpSettings(c.follow_up_settings);
          return settings.enabled && c.activation_rules.enabled !== false ? settings.afterSeconds : null;
        });
        await schedule(AI_INACTIVITY_JOB, ask.messages, (c) => {
          const settings = inactivitySettings(c.inactivity_run_settings);
          return settings.enabled ? settings.afterSeconds : null;
        });
        await schedule(
          AI_MANUAL_CONTROL_JOB,
          ask.manualControl,
          (c) => inactivitySettings(c.inactivity_run_settings).releaseAfterSeconds,
        );
      }
      return woken.size > 0 ? () => woken.forEach((kind) => deps.wake(kind)) : undefined;
    },
  };
}
