/**
 * Delays before each retry, after the first attempt (which goes out at once): Svix's schedule.
 * After the last one fails the delivery is given up: 8 attempts over about 27 hours.
 */
export const RETRY_DELAYS_SECONDS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600] as const;

/** Most a Retry-After can push an attempt back. */
const MAX_RETRY_AFTER_SECONDS = 24 * 3600;

/** Jitter spreads retries of many deliveries that failed together: each delay is moved by up to ±10 %. */
export const JITTER = 0.1;

/**
 * Milliseconds until the next attempt after failed attempt number `failed` (1-based within the
 * current schedule), or null when the schedule is exhausted. A Retry-After the receiver sent is
 * honoured: the next attempt never comes sooner than it asked.
 */
export function nextDelayMs(
  failed: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const base = RETRY_DELAYS_SECONDS[failed - 1];
  if (base === undefined) return null;
  const jittered = base * 1000 * (1 - JITTER + 2 * JITTER * random());
  return Math.round(Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_SECONDS * 1000)));
}

/** Retry-After as delta-seconds or an HTTP date, in ms from `nowMs`; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\s*\d{1,10}\s*$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}
