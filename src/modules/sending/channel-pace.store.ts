import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import type { Db } from '../../db/database.ts';

/** A channel's turn, as a shared store answers it. */
export interface Turn {
  /** Taken: the caller's turn comes in `waitMs`. Not taken (more than `maxWaitMs` away): nothing was reserved. */
  granted: boolean;
  /** Milliseconds until the turn (granted), or until the channel's next free turn (not granted). */
  waitMs: number;
  /** When that turn falls, in milliseconds since the epoch on the store's clock. */
  at: number;
}

/** A channel as the stores key its turns: by its business first, as every tenant table (SCALING.md). */
export interface PacedChannel {
  businessId: string;
  id: string;
}

/**
 * Turns on each channel shared by every server process: a GCRA (generic cell rate algorithm), where
 * a channel's state is one time, its next free turn. A caller takes the turn at max(next, now) and
 * moves it on by one interval; up to `burst` turns may be taken at once on an idle channel. Each
 * store does it in one round trip on its own clock, so processes whose clocks differ agree.
 *
 * rate-limiter-flexible, which has Redis and PostgreSQL stores, was considered: its limiters count
 * hits in fixed windows (twice the pace may start across a window's edge, where the pacer promises
 * no more than the pace within any second and one interval), answer a refusal rather than a turn
 * (callers would retry at once, together), and its PostgreSQL store creates its own table outside
 * the migrations.
 */
export interface ChannelPaceStore {
  /** The caller's turn on the channel, turns `intervalMs` apart, at most `burst` at once; none beyond `maxWaitMs`. */
  take(channel: PacedChannel, intervalMs: number, burst: number, maxWaitMs: number): Promise<Turn>;
  close(): Promise<void>;
}

/**
 * Turns in the database (`channel_paces`, one row per channel, upserted in one statement). The new
 * row's `next_at` carries the statement's time (`excluded.next_at` minus one interval), read once,
 * so the turn is decided at one instant however long the row lock was waited for.
 */
export function databasePaceStore(db: Db): ChannelPaceStore {
  return {
    async take(channel, intervalMs, burst, maxWaitMs) {
      const interval = sql`${intervalMs}::float8 * interval '1 millisecond'`;
      // Where the next free turn would move to if taken: one interval after max(next, now).
      const moved = sql`greatest(p.next_at + ${interval}, excluded.next_at)`;
      const fits = sql`${moved} - ${burst}::int * ${interval} <= excluded.next_at - ${interval} + ${maxWaitMs}::float8 * interval '1 millisecond'`;
      const { rows } = await sql<{ granted: boolean; next_at: number; now: number }>`
        insert into channel_paces as p (business_id, channel_id, next_at, granted)
        values (${channel.businessId}::uuid, ${channel.id}::uuid, clock_timestamp() + ${interval}, true)
        on conflict (business_id, channel_id) do update set
          granted = ${fits},
          next_at = case when ${fits} then ${moved} else p.next_at end
        returning granted, extract(epoch from next_at) * 1000 as next_at,
          extract(epoch from clock_timestamp()) * 1000 as now`.execute(db);
      const { granted } = rows[0];
      // Granted: the turn taken is `burst` intervals before the new next one. Not: the free turn is
      // one interval after the stored one, less the burst.
      const turn = Number(rows[0].next_at) - (granted ? burst : burst - 1) * intervalMs;
      const now = Number(rows[0].now);
      return { granted, waitMs: Math.max(0, turn - now), at: Math.max(turn, now) };
    },
    close: async () => {},
  };
}

// The same in Redis, on the server's clock (TIME, in microseconds). The key expires once its turn is
// a minute past: an idle channel's state is then "free now" either way.
const REDIS_TAKE = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local interval, burst, maxWait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
local moved = math.max(next, now) + interval
local wait = moved - burst * interval - now
if wait > maxWait then return {0, tostring(wait), tostring(now + wait)} end
redis.call('SET', KEYS[1], tostring(moved), 'PX', math.ceil(moved - now) + 60000)
return {1, tostring(wait), tostring(math.max(now, now + wait))}`;

/** Turns in Redis: one script per turn, so concurrent processes never take the same one. */
export function redisPaceStore(redis: Redis, prefix = 'pace:'): ChannelPaceStore {
  return {
    async take(channel, intervalMs, burst, maxWaitMs) {
      const [granted, wait, at] = (await redis.eval(
        REDIS_TAKE,
        1,
        `${prefix}${channel.businessId}:${channel.id}`,
        intervalMs,
        burst,
        maxWaitMs,
      )) as [number, string, string];
      return { granted: granted === 1, waitMs: Math.max(0, Number(wait)), at: Number(at) };
    },
    close: async () => {
      await redis.quit();
    },
  };
}
