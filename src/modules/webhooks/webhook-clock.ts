/** Where webhook code reads the time; injected so tests can move it (retry schedule, 5-day rule, log expiry). */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock reading as the ISO 8601 text the database columns take. */
export const isoAt = (ms: number): string => new Date(ms).toISOString();
