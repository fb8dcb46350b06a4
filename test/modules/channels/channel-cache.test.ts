import { describe, expect, it } from 'vitest';
import { ChannelCache } from '../../../src/modules/channels/channel-cache.ts';
import type { ChannelRow } from '../../../src/modules/channels/channels.repository.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ChannelCache', () => {
  const row = (id: string, businessId: string) => ({ id, business_id: businessId }) as ChannelRow;

  it('reuses a row found for the time given, per business, and looks an unknown id up every time', async () => {
    let now = 0;
    const reads: string[] = [];
    const rows = new Map([['b1:c1', row('c1', 'b1')]]);
    const cache = new ChannelCache(
      async (businessId, id) => {
        reads.push(`${businessId}:${id}`);
        return rows.get(`${businessId}:${id}`);
      },
      1000,
      () => now,
    );

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

  it('reads a row again at once when told to forget it', async () => {
    let reads = 0;
    const cache = new ChannelCache(async (businessId, id) => {
      reads++;
      return row(id, businessId);
    }, 60_000);
    await cache.get('b1', 'c1');
    await cache.get('b1', 'c1');
    cache.forget('b1', 'c1');
    await cache.get('b1', 'c1');
    expect(reads).toBe(2);
  });
});
