import { useEffect, useRef, useState } from 'react';
import { api } from '../api/client';
import { TYPING_EVENT, type TypingSignal } from '../live/live';

/** A typing signal is shown this long unless renewed (the sender renews it every few seconds while writing). */
const SHOWN_MS = 6000;
/** While writing, the composer says so at most this often. */
const RENEW_MS = 3000;
/** Without a keystroke this long, the composer says it stopped. */
const IDLE_MS = 4000;

/** Who else is writing in the conversation now (the contact, another team member), by name. */
export function useTypingOthers(conversationId: string, selfId: string | undefined): string[] {
  const [writers, setWriters] = useState<Map<string, string>>(new Map());
  useEffect(() => {
    const timers = new Map<string, ReturnType<typeof setTimeout>>();
    const drop = (key: string) =>
      setWriters((shown) => {
        const next = new Map(shown);
        next.delete(key);
        return next;
      });
    const onTyping = (event: Event) => {
      const signal = (event as CustomEvent<TypingSignal>).detail;
      if (signal.conversation_id !== conversationId || (signal.by === 'user' && signal.user_id === selfId)) return;
      const key = signal.by === 'contact' ? 'contact' : `user:${signal.user_id}`;
      clearTimeout(timers.get(key));
      if (!signal.typing) return drop(key);
      setWriters((shown) =>
        new Map(shown).set(key, signal.by === 'contact' ? 'The customer' : signal.name || 'Someone'),
      );
      timers.set(
        key,
        setTimeout(() => drop(key), SHOWN_MS),
      );
    };
    window.addEventListener(TYPING_EVENT, onTyping);
    return () => {
      window.removeEventListener(TYPING_EVENT, onTyping);
      for (const timer of timers.values()) clearTimeout(timer);
      setWriters(new Map());
    };
  }, [conversationId, selfId]);
  return [...writers.values()];
}

/** Tells the conversation's contact (and the team) that you are writing: call on each keystroke, and `stop` on send. */
export function useTypingSender(conversationId: string): { typed: () => void; stop: () => void } {
  const last = useRef(0);
  const idle = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const say = (typing: boolean) =>
    void api
      .POST('/dashboard/api/conversations/{id}/typing', { params: { path: { id: conversationId } }, body: { typing } })
      .catch(() => undefined);
  const stop = () => {
    clearTimeout(idle.current);
    if (last.current === 0) return;
    last.current = 0;
    say(false);
  };
  useEffect(() => () => clearTimeout(idle.current), []);
  const typed = () => {
    const now = Date.now();
    if (now - last.current >= RENEW_MS) {
      last.current = now;
      say(true);
    }
    clearTimeout(idle.current);
    idle.current = setTimeout(stop, IDLE_MS);
  };
  return { typed, stop };
}
