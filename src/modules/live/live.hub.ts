import type { ListenState } from '../../db/listen.ts';
import type { LiveCatchUp } from './live.catch-up.ts';
import { LiveConnection, type LiveSession, type LiveSink } from './live.connection.ts';
import { announcedBusiness, announcedEvents, type LiveEvent } from './live.events.ts';
import { readSignal, type LiveSignal } from './live.signals.ts';

type Log = { error(obj: object, msg: string): void };

/**
 * Bounds on open streams. Each holds a socket and a little memory; a browser keeps one per open
 * tab, and over HTTP/1.1 at most six connections per host, so a few per session are enough.
 */
export interface LiveLimits {
  /** Streams one signed-in session may hold open at once (its tabs). */
  perSession: number;
  /** Streams one server process holds open at once. */
  perProcess: number;
}
export const LIVE_LIMITS: LiveLimits = { perSession: 5, perProcess: 1000 };

export interface LiveOptions {
  limits?: LiveLimits;
  /** How often the sessions of open streams are checked (default 5 s). */
  sessionCheckMs?: number;
  /** How often a stream sends a comment line (default 15 s). */
  heartbeatMs?: number;
}

/** Of these sessions, those still signed in, with the business each is signed in to now. */
export type SessionCheck = (sessionIds: readonly string[]) => Promise<Map<string, string>>;

/** A listener of one business's announced events (LiveHub.watch), and of its signals when it takes them. */
export interface LiveWatcher {
  events(events: readonly LiveEvent[]): void;
  signal?(signal: LiveSignal): void;
}

export type OpenRefusal = 'session_limit' | 'process_limit';

/**
 * The open dashboards of this process, by business, and the fan-out of announced events to them.
 * Events come from the live-stream subscriber: on PostgreSQL through NOTIFY, which every server
 * process hears (receive), on the embedded engine straight after the commit (publish). A stream
 * receives only its session's business's events, and ends when its session does: every
 * `sessionCheckMs` the sessions of its open streams are checked in one call.
 */
export class LiveHub {
  private readonly byBusiness = new Map<string, Set<LiveConnection>>();
  private readonly bySession = new Map<string, Set<LiveConnection>>();
  /** Other listeners of a business's events in this process (the website widget's visitor streams). */
  private readonly watchers = new Map<string, Set<LiveWatcher>>();
  private count = 0;
  private sessionCheck: SessionCheck | undefined;
  private timer: NodeJS.Timeout | undefined;
  private log: Log | undefined;

  constructor(
    private readonly catchUp: LiveCatchUp,
    private readonly options: LiveOptions = {},
  ) {}

  get size(): number {
    return this.count;
  }

  get limits(): LiveLimits {
    return this.options.limits ?? LIVE_LIMITS;
  }

  /** How often a stream sends a comment line, so proxies do not close it for idleness. */
  get heartbeatMs(): number {
    return this.options.heartbeatMs ?? 15_000;
  }

  /** Adds a stream of the session (its caller starts it), or says which bound refuses it. */
  open(session: LiveSession, sink: LiveSink): LiveConnection | OpenRefusal {
    const limits = this.limits;
    if ((this.bySession.get(session.sessionId)?.size ?? 0) >= limits.perSession) return 'session_limit';
    if (this.count >= limits.perProcess) return 'process_limit';
    const connection = new LiveConnection(session, sink, this.catchUp, (c) => this.remove(c));
    add(this.byBusiness, session.businessId, connection);
    add(this.bySession, session.sessionId, connection);
    this.count++;
    return connection;
  }

  /**
   * Hands `watcher` each batch of the business's events announced to this process, and each of its
   * signals, until the answered function is called. Watchers filter what they need and must not throw.
   */
  watch(businessId: string, watcher: LiveWatcher): () => void {
    add(this.watchers, businessId, watcher);
    return () => void remove(this.watchers, businessId, watcher);
  }

  /** Hands events of one business to its open streams. */
  publish(businessId: string, events: readonly LiveEvent[]): void {
    if (events.length > 0) for (const watcher of this.watchers.get(businessId) ?? []) watcher.events(events);
    const connections = this.byBusiness.get(businessId);
    if (!connections || events.length === 0) return;
    for (const connection of connections) connection.deliver(events);
  }

  /** Hands a signal (someone is typing) of one business to its open streams and watchers. */
  signal(businessId: string, signal: LiveSignal): void {
    for (const watcher of this.watchers.get(businessId) ?? []) watcher.signal?.(signal);
    for (const connection of this.byBusiness.get(businessId) ?? []) connection.deliverSignal(signal);
  }

  /** An announcement heard on SIGNAL_CHANNEL. */
  receiveSignal(payload: string): void {
    const read = readSignal(payload);
    if (read) this.signal(read.businessId, read.signal);
  }

  /** An announcement heard on LIVE_CHANNEL; dropped unread when no stream of its business is open here. */
  receive(payload: string): void {
    const businessId = announcedBusiness(payload);
    if (!this.byBusiness.has(businessId) && !this.watchers.has(businessId)) return;
    try {
      this.publish(businessId, announcedEvents(payload));
    } catch (err) {
      this.log?.error({ err }, 'reading a live announcement failed');
    }
  }

  /** The announcements' listener: once it listens again, every stream catches up on what it may have missed. */
  listenState(state: ListenState): void {
    if (state !== 'listening') return;
    for (const connections of this.byBusiness.values()) for (const connection of connections) connection.resync();
  }

  /** Ends the streams of a session (signed out in this process). */
  endSession(sessionId: string): void {
    for (const connection of [...(this.bySession.get(sessionId) ?? [])]) connection.end();
  }

  /** How the hub learns that a session ended in another process (or expired). */
  checkSessionsWith(check: SessionCheck): void {
    this.sessionCheck = check;
  }

  start(log: Log): void {
    this.log = log;
    this.timer = setInterval(() => void this.checkSessions(), this.options.sessionCheckMs ?? 5_000);
    this.timer.unref();
  }

  /** Ends every stream (the server is closing: its connections must end for it to close). */
  stop(): void {
    clearInterval(this.timer);
    for (const connections of [...this.bySession.values()]) for (const connection of [...connections]) connection.end();
  }

  /** Ends the streams whose session ended or moved to another business. */
  async checkSessions(): Promise<void> {
    if (!this.sessionCheck || this.count === 0) return;
    try {
      const asked = [...this.bySession.keys()];
      const live = await this.sessionCheck(asked);
      // Only the sessions asked about: a session's first stream may have opened during the check.
      for (const sessionId of asked)
        for (const connection of [...(this.bySession.get(sessionId) ?? [])])
          if (live.get(sessionId) !== connection.session.businessId) connection.end();
    } catch (err) {
      this.log?.error({ err }, 'checking the sessions of live streams failed');
    }
  }

  private remove(connection: LiveConnection): void {
    const { businessId, sessionId } = connection.session;
    if (remove(this.byBusiness, businessId, connection)) this.count--;
    remove(this.bySession, sessionId, connection);
  }
}

function add<T>(map: Map<string, Set<T>>, key: string, value: T): void {
  const set = map.get(key) ?? new Set<T>();
  set.add(value);
  map.set(key, set);
}

function remove<T>(map: Map<string, Set<T>>, key: string, value: T): boolean {
  const set = map.get(key);
  if (!set?.delete(value)) return false;
  if (set.size === 0) map.delete(key);
  return true;
}
