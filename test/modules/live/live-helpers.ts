import type { LiveFrame, LiveSink } from '../../../src/modules/live/live.connection.ts';
import type { LiveEvent } from '../../../src/modules/live/live.events.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds or `ms` have passed; answers whether it held. */
export async function eventually(check: () => boolean, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) return false;
    await sleep(5);
  }
  return true;
}

/** A stream's sink that records its frames (each with when it arrived) and whether it was closed. */
export function recordingSink(options: { send?: (frame: LiveFrame) => Promise<void> } = {}) {
  const frames: (LiveFrame & { at: number })[] = [];
  let closed = false;
  const sink: LiveSink = {
    async send(frame) {
      await options.send?.(frame);
      frames.push({ ...frame, at: performance.now() });
    },
    close() {
      closed = true;
    },
  };
  return {
    sink,
    frames,
    get closed() {
      return closed;
    },
    /** The domain events received, in the order received. */
    events: () => frames.filter((f) => f.event === undefined).map((f) => f.data as LiveEvent),
    /** The control frames (ready, reset), by name. */
    named: (name: string) => frames.filter((f) => f.event === name),
  };
}

/** A frame read off the wire, with when it was parsed. */
export interface WireFrame {
  id?: string;
  event?: string;
  data: string;
  at: number;
}

/**
 * An open `GET /dashboard/api/live` read with fetch (undici) over a real connection and parsed with
 * eventsource-parser, as a browser's EventSource would read it.
 */
export interface SseClient {
  status: number;
  headers: Headers;
  frames: WireFrame[];
  /** Comment lines received (the heartbeat). */
  comments: number;
  retry: number | undefined;
  /** The domain events received, parsed. */
  events(): LiveEvent[];
  named(name: string): WireFrame[];
  /** Resolves when the server ended the stream (or the client closed it). */
  ended: Promise<void>;
  close(): void;
  /** The answer's body when it was no stream (an error). */
  body?: string;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseClient> {
  const { createParser } = await import('eventsource-parser');
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const client: SseClient = {
    status: res.status,
    headers: res.headers,
    frames: [],
    comments: 0,
    retry: undefined,
    events: () => client.frames.filter((f) => !f.event).map((f) => JSON.parse(f.data) as LiveEvent),
    named: (name) => client.frames.filter((f) => f.event === name),
    ended: Promise.resolve(),
    close: () => abort.abort(),
  };
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    client.body = await res.text();
    return client;
  }
  const parser = createParser({
    onEvent: (e) => client.frames.push({ id: e.id, event: e.event, data: e.data, at: performance.now() }),
    onComment: () => void client.comments++,
    onRetry: (ms) => (client.retry = ms),
  });
  const decoder = new TextDecoder();
  client.ended = (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // aborted by close()
    }
  })();
  return client;
}
