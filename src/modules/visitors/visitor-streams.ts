import type { VisitorClaims } from './visitor-token.ts';

/** Streams one visitor may hold (its tabs), and this process in all. */
export const VISITOR_STREAM_LIMITS = { perVisitor: 5, perProcess: 1000 };

/** Where a stream's frames go (the HTTP response). */
export interface VisitorSink {
  close(): void;
}

/**
 * The visitors' open streams of this process, counted for their bounds and ended together when the
 * server closes (an open stream would hold the server's close otherwise).
 */
export class VisitorStreams {
  private readonly byVisitor = new Map<string, Set<VisitorSink>>();
  private count = 0;

  /** Counts a stream in, or says which bound refuses it; the answered function counts it out (once). */
  open(claims: VisitorClaims, sink: VisitorSink): (() => void) | 'visitor_limit' | 'process_limit' {
    const key = `${claims.channelId}:${claims.visitorId}`;
    const mine = this.byVisitor.get(key) ?? new Set<VisitorSink>();
    if (mine.size >= VISITOR_STREAM_LIMITS.perVisitor) return 'visitor_limit';
    if (this.count >= VISITOR_STREAM_LIMITS.perProcess) return 'process_limit';
    mine.add(sink);
    this.byVisitor.set(key, mine);
    this.count++;
    return () => {
      if (!mine.delete(sink)) return;
      this.count--;
      if (mine.size === 0) this.byVisitor.delete(key);
    };
  }

  /** Ends every stream (the server is closing). */
  endAll(): void {
    for (const sinks of [...this.byVisitor.values()]) for (const sink of [...sinks]) sink.close();
  }
}
