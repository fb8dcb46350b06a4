import { describe, expect, it } from 'vitest';
import type { ChannelRow } from '../../../src/modules/channels/channels.repository.ts';
import { ChannelCache } from '../../../src/modules/sending/channel-cache.ts';
import { ChannelPacer } from '../../../src/modules/sending/channel-pacer.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The most calls that started within any window of `ms`. */
const mostWithin = (times: number[], ms: number) => Math.max(...times.map((start) => times.filter((x) => x >= start && x < start + ms).length));

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
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(1_500);
  });

  it('paces each channel on its own', async () => {
    const pacer = new ChannelPacer();
    const t0 = performance.now();
    await Promise.all(['a', 'b'].flatMap((c) => Array.from({ length: 10 }, async () => {
      await pacer.acquire(c, 20);
      await pacer.admit(c, 20);
    })));
    // 10 calls each at 20/s: about half a second, not a whole second for the 20 together.
    expect(performance.now() - t0).toBeLessThan(900);
  });
});

describe('ChannelCache', () => {
  const row = (id: string, businessId: string) => ({ id, business_id: businessId }) as ChannelRow;

  it('reuses a row found for the time given, per business, and looks an unknown id up every time', async () => {
    let now = 0;
    const reads: string[] = [];
    const rows = new Map([['b1:c1', row('c1', 'b1')]]);
    const cache = new ChannelCache(async (businessId, id) => {
      reads.push(`${businessId}:${id}`);
      return rows.get(`${businessId}:${id}`);
    }, 1000, () => now);

    expect((await cache.get('b1', 'c1'))?.id).toBe('c1');
    expect((await cache.get('b1', 'c1'))?.id).toBe('c1');
    expect(await cache.get('b2', 'c1')).toBeUndefined(); // another business's id
    expect(await cache.get('b2', 'c1')).toBeUndefined();
    expect(reads).toEqual(['b1:c1', 'b2:c1', 'b2:c1']);

    rows.delete('b1:c1');
    now = 999;
    expect((await cache.get('b1', 'c1'))?.id).toBe('c1');
    now = 1000;
    expect(await cache.get('b1', 'c1')).toBeUndefined();
    expect(reads).toEqual(['b1:c1', 'b2:c1', 'b2:c1', 'b1:c1']);
  });

  it('shares one read between concurrent lookups', async () => {
    let reads = 0;
    const cache = new ChannelCache(async (businessId, id) => {
      reads++;
      await sleep(20);
      return row(id, businessId);
    });
    await Promise.all(Array.from({ length: 5 }, () => cache.get('b1', 'c1')));
    expect(reads).toBe(1);
  });
});
