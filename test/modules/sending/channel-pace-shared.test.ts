import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../../src/db/database.ts';
import {
  databasePaceStore,
  redisPaceStore,
  type ChannelPaceStore,
} from '../../../src/modules/sending/channel-pace.store.ts';
import { ChannelPacer } from '../../../src/modules/sending/channel-pacer.ts';
import { engine } from '../../helpers/test-app.ts';
import { sharedDatabase, type SharedDatabase } from '../webhooks/webhook-harness.ts';

// Two pacers, as two server processes hold, each on its own connection to the shared store, sending
// from one channel at once: together they keep to the channel's pace.

/** The most calls that started within any window of `ms`. */
const mostWithin = (times: number[], ms: number) =>
  Math.max(...times.map((start) => times.filter((x) => x >= start && x < start + ms).length));

/** `count` calls through each pacer at `pace`, all at once; their start times (ms) and the store's time per turn. */
async function drive(pacers: ChannelPacer[], channelId: string, pace: number, count: number) {
  const businessId = randomUUID();
  const starts: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    pacers.flatMap((pacer) =>
      Array.from({ length: count }, async () => {
        for (;;) {
          // As the send job: a turn too far away is not taken, and the job comes back later.
          const refused = await pacer.acquire(channelId, pace, { businessId, maxWaitMs: 1000 });
          if (refused === 0) break;
          await new Promise((resolve) => setTimeout(resolve, refused));
        }
        await pacer.admit(channelId, pace);
        starts.push(performance.now() - t0);
      }),
    ),
  );
  return starts.sort((a, b) => a - b);
}

/** Wraps a store to time its round trips and note when each turn it granted falls (on its clock). */
function timed(store: ChannelPaceStore, times: number[], turns: number[]): ChannelPaceStore {
  return {
    async take(...args) {
      const t0 = performance.now();
      const turn = await store.take(...args);
      times.push(performance.now() - t0);
      if (turn.granted) turns.push(turn.at);
      return turn;
    },
    close: () => store.close(),
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const stores: { name: string; open(): Promise<ChannelPaceStore>; run: boolean }[] = [
  {
    name: 'the database',
    run: true,
    open: async () => {
      const handle = await shared.open();
      handles.push(handle);
      return databasePaceStore(handle.db);
    },
  },
  {
    name: 'Redis',
    run: engine === 'postgres' && Boolean(process.env.TEST_REDIS_URL),
    open: async () => redisPaceStore(new Redis(process.env.TEST_REDIS_URL!, { maxRetriesPerRequest: 2 })),
  },
];

let shared: SharedDatabase;
const handles: DatabaseHandle[] = [];
const opened: ChannelPaceStore[] = [];
beforeAll(async () => {
  shared = await sharedDatabase();
});
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
  await Promise.all(handles.map((handle) => handle.close()));
  await shared.drop();
});

describe.each(stores.filter((store) => store.run))('a channel paced in $name', ({ open }) => {
  it('two pacers on one channel together keep to its pace', async () => {
    const times: number[] = [];
    const turns: number[] = [];
    const [a, b] = await Promise.all([open(), open()]);
    opened.push(a, b);
    const pacers = [a, b].map((store) => new ChannelPacer({ shared: timed(store, times, turns) }));
    // 30 calls each at 20/s: 60 calls, about three seconds. The turns the store gave are 1.05 s / 20
    // apart, never more than 20 within a second; each start comes after its turn, later by the
    // answer's way back and its timer's lateness (long on a loaded machine), so the starts are
    // checked as a rate.
    const starts = await drive(pacers, randomUUID(), 20, 30);
    expect(turns).toHaveLength(60);
    expect(mostWithin(turns, 1000)).toBeLessThanOrEqual(20);
    expect(starts.at(-1)! - starts[0]).toBeGreaterThanOrEqual(2_800);
    console.info(`${times.length} turns, median ${median(times).toFixed(2)} ms each`);
  });

  it('paces each channel on its own, and a lone pacer at the full pace', async () => {
    const store = await open();
    opened.push(store);
    const pacer = new ChannelPacer({ shared: store });
    const t0 = performance.now();
    await Promise.all(['a', 'b'].map(() => drive([pacer], randomUUID(), 20, 10)));
    // 10 calls each at 20/s: about half a second, not a whole second for the 20 together.
    expect(performance.now() - t0).toBeLessThan(900);
  });
});
