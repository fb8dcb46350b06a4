// The live stream of the business (GET /dashboard/api/live): one EventSource per signed-in tab, which
// the browser reconnects by itself with Last-Event-ID. Views subscribe and reload what an event names.
import { createContext, useContext, useEffect, useLayoutEffect, useRef, useState, type ReactNode } from 'react';

/** A window event the page fires when it moved the user's read position, which no live event announces. */
export const READ_EVENT = 'dashboard:read';

/** A window event for each typing signal of the stream (`event: typing`): someone is writing, or stopped. */
export const TYPING_EVENT = 'dashboard:typing';

/** Someone writing in a conversation: its contact (in the website widget) or a team member. */
export interface TypingSignal {
  conversation_id: string;
  by: 'contact' | 'user';
  user_id: string | null;
  name: string | null;
  typing: boolean;
}

export interface LiveEvent {
  id: number;
  /** message_created, message_status_changed, message_changed, conversation_changed or contact_changed. */
  type: string;
  conversation_id: string | null;
  subject_id: string;
  data: Record<string, unknown> | null;
  created_at: string;
}

/** An event of the stream, or `reset`: what was missed cannot be told, so every view reloads. */
export type LiveSignal = { kind: 'event'; event: LiveEvent } | { kind: 'reset' };
type Listener = (signal: LiveSignal) => void;

const LiveContext = createContext<Set<Listener> | undefined>(undefined);

export function LiveProvider({ children }: { children: ReactNode }) {
  const [listeners] = useState(() => new Set<Listener>());
  useEffect(() => {
    const source = new EventSource('/dashboard/api/live');
    const emit = (signal: LiveSignal) => listeners.forEach((listener) => listener(signal));
    source.onmessage = (message: MessageEvent<string>) => {
      try {
        emit({ kind: 'event', event: JSON.parse(message.data) as LiveEvent });
      } catch {
        emit({ kind: 'reset' });
      }
    };
    source.addEventListener('reset', () => emit({ kind: 'reset' }));
    // A moment's signal, not an event: no view reloads for it.
    source.addEventListener('typing', (message: MessageEvent<string>) => {
      try {
        const detail = JSON.parse(message.data) as TypingSignal;
        window.dispatchEvent(new CustomEvent<TypingSignal>(TYPING_EVENT, { detail }));
      } catch {
        // A signal that cannot be read is only a moment's hint: dropped.
      }
    });
    return () => source.close();
  }, [listeners]);
  return <LiveContext.Provider value={listeners}>{children}</LiveContext.Provider>;
}

/** Calls `listener` on every live signal while the component is shown (the latest listener each time). */
export function useLive(listener: Listener): void {
  const listeners = useContext(LiveContext);
  const latest = useRef(listener);
  useLayoutEffect(() => {
    latest.current = listener;
  });
  useEffect(() => {
    if (!listeners) return;
    const call: Listener = (signal) => latest.current(signal);
    listeners.add(call);
    return () => {
      listeners.delete(call);
    };
  }, [listeners]);
}

/**
 * Calls `reload` once per burst of signals (a batch of events arrives together), at most `ms` later:
 * every view reloads what changed instead of patching itself event by event.
 */
export function useLiveReload(reload: () => void, filter: (signal: LiveSignal) => boolean, ms = 120): void {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const latest = useRef(reload);
  useLayoutEffect(() => {
    latest.current = reload;
  });
  useEffect(() => () => clearTimeout(timer.current), []);
  useLive((signal) => {
    if (!filter(signal)) return;
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), ms);
  });
}
