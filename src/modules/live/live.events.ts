import type { DomainEvent, DomainEventType } from '../domain-events/domain-events.types.ts';

/** The NOTIFY channel on which the live-stream subscriber announces committed events to every server process. */
export const LIVE_CHANNEL = 'live_events';

/**
 * What an open dashboard receives of a domain event: enough to apply it to what it shows (a new
 * message in a conversation, a status, a change of assignment) or to reload what it names.
 */
export interface LiveEvent {
  /** The domain event's id: the stream's `id:`, which a reconnecting client sends back. */
  id: number;
  type: DomainEventType;
  conversation_id: string | null;
  /** The message, conversation or contact the event is about. */
  subject_id: string;
  /** The event's data; null when larger than MAX_DATA_BYTES, so the client reloads the subject. */
  data: Record<string, unknown> | null;
  created_at: string;
}

/** Larger data is left out, so any one event fits in one announcement. */
const MAX_DATA_BYTES = 2048;

/**
 * PostgreSQL refuses a NOTIFY payload of 8000 bytes or more (in its default build); the rest of
 * the margin is for the business id and the brackets.
 */
const MAX_ANNOUNCEMENT_BYTES = 7800;

export function liveEvent(e: DomainEvent): LiveEvent {
  const data = Buffer.byteLength(JSON.stringify(e.data)) <= MAX_DATA_BYTES ? e.data : null;
  return {
    id: e.id,
    type: e.type,
    conversation_id: e.conversationId,
    subject_id: e.subjectId,
    data,
    created_at: e.createdAt,
  };
}

/**
 * The announcements of a batch of events: per business, in the batch's order, payloads
 * `<business id> <JSON array of LiveEvent>`, each under the NOTIFY limit. The business id comes
 * first so that a process with no dashboard of that business open drops it without parsing.
 */
export function announcements(events: readonly DomainEvent[]): string[] {
  const byBusiness = new Map<string, string[]>();
  for (const event of events) {
    const list = byBusiness.get(event.businessId) ?? [];
    list.push(JSON.stringify(liveEvent(event)));
    byBusiness.set(event.businessId, list);
  }
  const payloads: string[] = [];
  for (const [businessId, items] of byBusiness) {
    let chunk: string[] = [];
    let bytes = 0;
    for (const item of items) {
      const size = Buffer.byteLength(item) + 1;
      if (chunk.length > 0 && bytes + size > MAX_ANNOUNCEMENT_BYTES) {
        payloads.push(`${businessId} [${chunk.join(',')}]`);
        chunk = [];
        bytes = 0;
      }
      chunk.push(item);
      bytes += size;
    }
    if (chunk.length > 0) payloads.push(`${businessId} [${chunk.join(',')}]`);
  }
  return payloads;
}

/** The business an announcement is for (what precedes the first space). */
export const announcedBusiness = (payload: string): string => payload.slice(0, payload.indexOf(' '));

/** The events of an announcement (made by announcements()). */
export const announcedEvents = (payload: string): LiveEvent[] =>
  JSON.parse(payload.slice(payload.indexOf(' ') + 1)) as LiveEvent[];
