import { describe, expect, it } from 'vitest';
import { ChannelPacer } from '../../../src/modules/sending/channel-pacer.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The most calls that started within any window of `ms`. */
const mostWithin = (times: number[], ms: number) =>
  Math.max(...times.map((start) => times.filter((x) => x >= start && x < start + ms).length));

describe('ChannelPacer', () => {
  it('spreads calls released together again: never more than the pace within a second and one interval', async () => {
    const pacer = new ChannelPacer();
    const starts: number[] = [];
    const t0 = performance.now();
    // 40 calls at 20/s. A slow shared "call started" statement releases the calls whose turns came
    // while it ran all at once, here at every 300 ms: groups of ~6 that, left alone, would put 24
    // calls into some second.
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        await pacer.acquire('c1', 20);
        const elapsed = performance.now() - t0;
        await sleep(Math.ceil((elapsed + 1) / 300) * 300 - elapsed);
        await pacer.admit('c1', 20);
        starts.push(performance.now() - t0);
      }),
    );
    starts.sort((a, b) => a - b);
    expect(mostWithin(starts, 1050)).toBeLessThanOrEqual(20);
    expect(starts.at(-1)! - starts[0]).toBeGreaterThanOrEqual(1_500);
  });

  it('paces each channel on its own', async () => {
    const pacer = new ChannelPacer();
    const t0 = performance.now();
    await Promise.all(
      ['a', 'b'].flatMap((c) =>
        Array.from({ length: 10 }, async () => {
          await pacer.acquire(c, 20);
          await pacer.admit(c, 20);
        }),
      ),
    );
    // 10 calls each at 20/s: about half a second, not a whole second for the 20 together.
    expect(performance.now() - t0).toBeLessThan(900);
  });
});
