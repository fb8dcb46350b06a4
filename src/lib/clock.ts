/**
 * Where time is read by what schedules work (webhook retries, the 5-day rule, log expiry); injected so
 * tests can move it.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock reading as the ISO 8601 text the database columns take. */
export const isoAt = (ms: number): string => new Date(ms).toISOString();
