import type { CatchUp, LiveCatchUp } from './live.catch-up.ts';
import type { LiveEvent } from './live.events.ts';
import type { LiveSignal } from './live.signals.ts';

/** Whose stream it is: a signed-in dashboard session, of one business. */
export interface LiveSession {
  sessionId: string;
  userId: string;
  businessId: string;
}

/** One Server-Sent Events frame. */
export interface LiveFrame {
  id?: string;
  event?: string;
  data: unknown;
  retry?: number;
}

/** Where a stream's frames go (the HTTP response); `send` resolves once the socket took the frame. */
export interface LiveSink {
  send(frame: LiveFrame): Promise<void>;
  close(): void;
}

/** How long a client waits before it reconnects (the `retry:` hint of the first frame). */
export const RETRY_MS = 2000;
/** Frames waiting for a client that does not read; past it the stream ends and the client catches up later. */
const MAX_QUEUED = 1000;
/** Events held while a catch-up is read; past it they are dropped and read again from the table. */
const MAX_HELD = 1000;

/**
 * One open stream. It starts with what the client missed (or a reset), then a `ready` frame, then
 * each event as it is announced. Announcements that arrive during a catch-up are held and sent
 * after it, less those the catch-up sent, so nothing is lost between reading the table and hearing
 * the announcements.
 */
export class LiveConnection {
  /** The newest id sent: where a catch-up after missed announcements starts. */
  private lastId = 0;
  private held: LiveEvent[] = [];
  private overflowed = false;
  private syncing = false;
  private again = false;
  private queued = 0;
  private tail: Promise<void> = Promise.resolve();
  private ended = false;

  constructor(
    readonly session: LiveSession,
    private readonly sink: LiveSink,
    private readonly catchUp: LiveCatchUp,
    private readonly onEnd: (connection: LiveConnection) => void,
  ) {}

  /**
   * Sends what the client missed after `lastEventId` (none: only the position), then `ready`.
   * Rejects when the catch-up could not be read; the caller answers with an error.
   */
  start(lastEventId: number | undefined): Promise<void> {
    return this.sync(lastEventId, true);
  }

  /** Announced events of the session's business. */
  deliver(events: readonly LiveEvent[]): void {
    if (this.ended) return;
    if (this.syncing) {
      if (this.held.length + events.length > MAX_HELD) this.overflowed = true;
      else this.held.push(...events);
      return;
    }
    for (const event of events) this.sendEvent(event);
  }

  /** A signal (someone is typing): a frame of its own type without an id, so it moves no catch-up position. */
  deliverSignal(signal: LiveSignal): void {
    if (!this.ended && !this.syncing) this.enqueue({ event: signal.type, data: signal });
  }

  /** Announcements may have been missed (the listener reconnected): catch up from the last id sent. */
  resync(): void {
    void this.sync(this.lastId, false).catch(() => this.end());
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.sink.close();
    this.onEnd(this);
  }

  get isEnded(): boolean {
    return this.ended;
  }

  private async sync(after: number | undefined, first: boolean): Promise<void> {
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = true;
    try {
      for (;;) {
        this.again = false;
        const result = await this.catchUp.read(this.session.businessId, after);
        if (this.ended) return;
        const sent = this.sendCatchUp(result);
        if (first) {
          this.lastId = Math.max(this.lastId, result.head);
          this.enqueue({ event: 'ready', id: String(this.lastId), data: { head: this.lastId }, retry: RETRY_MS });
          first = false;
        }
        const held = this.held;
        this.held = [];
        if (this.overflowed) {
          this.overflowed = false;
          this.again = true;
        } else for (const event of held) if (!sent.has(event.id)) this.sendEvent(event);
        if (!this.again) return;
        after = this.lastId;
      }
    } finally {
      this.syncing = false;
      this.held = [];
    }
  }

  /** The catch-up's frames; the ids sent. */
  private sendCatchUp(result: CatchUp): Set<number> {
    const sent = new Set<number>();
    if ('reset' in result) {
      this.lastId = Math.max(this.lastId, result.head);
      this.enqueue({ event: 'reset', id: String(result.head), data: { reason: result.reset, head: result.head } });
      return sent;
    }
    for (const event of result.events) {
      sent.add(event.id);
      this.sendEvent(event);
    }
    return sent;
  }

  private sendEvent(event: LiveEvent): void {
    this.lastId = Math.max(this.lastId, event.id);
    this.enqueue({ id: String(event.id), data: event });
  }

  private enqueue(frame: LiveFrame): void {
    if (this.ended) return;
    // A client that stopped reading: end its stream rather than hold its frames; it reconnects
    // and catches up from the table.
    if (this.queued >= MAX_QUEUED) return this.end();
    this.queued++;
    this.tail = this.tail
      .then(() => (this.ended ? undefined : this.sink.send(frame)))
      .then(
        () => void this.queued--,
        () => this.end(),
      );
  }
}
