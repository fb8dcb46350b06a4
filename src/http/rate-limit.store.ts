import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Db } from '../db/database.ts';

/** One fixed-window hit: the count in the current window and the milliseconds left of it. */
export interface Hit {
  current: number;
  ttl: number;
}

/** A counter shared by every server process: `key` is `<businessId>:<group>`. */
export interface HitCounter {
  hit(key: string, windowMs: number): Promise<Hit>;
  close(): Promise<void>;
}

/**
 * Counters in the database (PGlite or PostgreSQL): one row per business and group, upserted and
 * returned in one statement. A window opens at the first hit after the previous one ended (as the
 * Redis counter's key expiry does), timed by the database clock so every process agrees.
 */
export function databaseCounter(db: Db): HitCounter {
  return {
    async hit(key, windowMs) {
      const [businessId, bucket] = splitKey(key);
      const width = sql`${windowMs} * interval '1 millisecond'`;
      const { rows } = await sql<{ hits: number; ttl: number }>`
        insert into rate_limit_counters as c (business_id, bucket, window_start, hits)
        values (${businessId}::uuid, ${bucket}, clock_timestamp(), 1)
        on conflict (business_id, bucket) do update set
          hits = case when c.window_start + ${width} > excluded.window_start then c.hits + 1 else 1 end,
          window_start = case when c.window_start + ${width} > excluded.window_start then c.window_start else excluded.window_start end
        returning hits, ceil(extract(epoch from window_start - clock_timestamp()) * 1000 + ${windowMs})::integer as ttl`.execute(
        db,
      );
      const row = rows[0];
      return { current: row.hits, ttl: Math.max(0, row.ttl) };
    },
    close: async () => {},
  };
}

/**
 * Deletes the database counters whose window ended over `graceMs` ago: keys by address or visitor (the
 * website widget's) would otherwise stay forever. A counter deleted starts again at its next hit.
 */
export async function deleteEndedCounters(db: Db, windowMs: number, graceMs = 3_600_000): Promise<number> {
  const result = await sql`delete from rate_limit_counters
    where window_start < clock_timestamp() - ${windowMs + graceMs} * interval '1 millisecond'`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

const REDIS_HIT = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {current, ttl}`;

/** Counters in Redis: INCR + PEXPIRE in one script, so concurrent processes never lose a hit. */
export function redisCounter(redis: Redis, prefix = 'ratelimit:'): HitCounter {
  return {
    async hit(key, windowMs) {
      const [current, ttl] = (await redis.eval(REDIS_HIT, 1, prefix + key, windowMs)) as [number, number];
      return { current, ttl };
    },
    close: async () => {
      await redis.quit();
    },
  };
}

function splitKey(key: string): [string, string] {
  const at = key.indexOf(':');
  return [key.slice(0, at), key.slice(at + 1)];
}

/**
 * The store class @fastify/rate-limit instantiates. Its own stores keep one counter per route;
 * ours keeps one per key (business and group), so GET /messages and the timeline share theirs.
 */
export function storeFor(counter: HitCounter): FastifyRateLimitStoreCtor {
  class SharedStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: Hit) => void, timeWindow: number): void {
      counter.hit(key, timeWindow).then(
        (hit) => callback(null, hit),
        (err: Error) => callback(err),
      );
    }
    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return SharedStore;
}
