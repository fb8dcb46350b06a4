import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/lib/batcher.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A batcher whose runs are recorded and take `runMs`, answering each item doubled. */
function recording(options: ConstructorParameters<typeof Batcher<number, number>>[1], runMs = 5) {
  const runs: number[][] = [];
  const batcher = new Batcher<number, number>(async (items) => {
    runs.push(items);
    await sleep(runMs);
    if (items.includes(-1)) throw new Error('bad item');
    return items.map((i) => i * 2);
  }, options);
  return { batcher, runs };
}

describe('Batcher', () => {
  it('runs a lone item at once, and batches the items that arrive while it runs', async () => {
    const { batcher, runs } = recording({ maxRunning: 1, maxItems: 10 });
    const first = batcher.submit(1);
    expect(runs).toEqual([[1]]);
    const rest = [2, 3, 4].map((i) => batcher.submit(i));
    expect(await Promise.all([first, ...rest])).toEqual([2, 4, 6, 8]);
    expect(runs).toEqual([[1], [2, 3, 4]]);
  });

  it('takes at most maxItems (by sizeOf) a batch, in arrival order', async () => {
    const { batcher, runs } = recording({ maxRunning: 1, maxItems: 5, sizeOf: (i) => i });
    await Promise.all([1, 2, 2, 3, 1, 9].map((i) => batcher.submit(i)));
    // [1] runs at once; then 2+2 (a 3 would pass 5), 3+1, and 9 alone (bigger than maxItems).
    expect(runs).toEqual([[1], [2, 2], [3, 1], [9]]);
  });

  it('fails only the bad item of a failed batch: the others run again alone', async () => {
    const { batcher, runs } = recording({ maxRunning: 1, maxItems: 10 });
    const first = batcher.submit(1);
    const results = await Promise.allSettled([first, batcher.submit(2), batcher.submit(-1), batcher.submit(3)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(runs).toEqual([[1], [2, -1, 3], [2], [-1], [3]]);
  });

  it('with gatherMs 0, items submitted in one turn share a batch', async () => {
    const { batcher, runs } = recording({ maxRunning: 1, maxItems: 10, gatherMs: 0 });
    const all = [1, 2, 3].map((i) => batcher.submit(i));
    expect(runs).toEqual([]);
    await Promise.all(all);
    expect(runs).toEqual([[1, 2, 3]]);
  });

  it('with gatherMs, a batch starts that long after its first item, also right after a batch ends', async () => {
    const { batcher, runs } = recording({ maxRunning: 1, maxItems: 10, gatherMs: 30 }, 1);
    const started = performance.now();
    const first = batcher.submit(1);
    await sleep(10);
    const second = batcher.submit(2);
    expect(runs).toEqual([]);
    await first;
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
    expect(runs).toEqual([[1, 2]]);
    await second;

    // Items arriving one by one while a batch runs wait for their own gathering, not for its end.
    const slow = recording({ maxRunning: 1, maxItems: 10, gatherMs: 100 }, 30);
    const a = slow.batcher.submit(1);
    await sleep(110); // the first batch runs from 100 to 130 ms
    const b = slow.batcher.submit(2); // gathers until 210 ms
    await sleep(40); // the first batch has ended; 2 is still gathering
    const c = slow.batcher.submit(3);
    await Promise.all([a, b, c]);
    expect(slow.runs).toEqual([[1], [2, 3]]);
  });
});
