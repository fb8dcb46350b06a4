import { sql } from 'kysely';
import type { Db, Engine } from '../../db/database.ts';

/**
 * The NOTIFY channel of signals: what an open dashboard or widget shows for a moment and nothing
 * stores (someone is typing). Unlike events they have no id and no catch-up: one missed is gone.
 */
export const SIGNAL_CHANNEL = 'live_signals';

/** Someone started or stopped writing in a conversation: its contact (in the widget) or a team member. */
export interface TypingSignal {
  type: 'typing';
  conversation_id: string;
  contact_id: string;
  by: 'contact' | 'user';
  /** The team member's id and name, when `by` is `user`. */
  user_id: string | null;
  name: string | null;
  typing: boolean;
}

export type LiveSignal = TypingSignal;

/** Where signals go in this process (LiveHub.signal). */
export type SignalSink = (businessId: string, signal: LiveSignal) => void;

/** A signal as announced on SIGNAL_CHANNEL. */
export function signalPayload(businessId: string, signal: LiveSignal): string {
  return JSON.stringify({ b: businessId, s: signal });
}

/** The business and signal of an announcement, or undefined when it is none. */
export function readSignal(payload: string): { businessId: string; signal: LiveSignal } | undefined {
  try {
    const { b, s } = JSON.parse(payload) as { b?: unknown; s?: { type?: unknown } };
    if (typeof b !== 'string' || s?.type !== 'typing') return undefined;
    return { businessId: b, signal: s as LiveSignal };
  } catch {
    return undefined;
  }
}

/**
 * Sends signals to every server process: on PostgreSQL with NOTIFY (outside any transaction: a
 * signal is sent at once, and this process hears its own), on the embedded engine, which runs one
 * process, straight to its hub.
 */
export class LiveSignals {
  constructor(
    private readonly db: Db,
    private readonly engine: Engine,
    private readonly local: SignalSink,
  ) {}

  async send(businessId: string, signal: LiveSignal): Promise<void> {
    if (this.engine !== 'postgres') return this.local(businessId, signal);
    await sql`select pg_notify(${SIGNAL_CHANNEL}, ${signalPayload(businessId, signal)})`.execute(this.db);
  }
}
