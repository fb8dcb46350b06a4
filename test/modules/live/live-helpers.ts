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
