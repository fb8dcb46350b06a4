import type { ChannelRow } from './channels.repository.ts';

/**
 * How long a channel row read for sending is reused: every send of a busy channel would otherwise
 * read the same row (one statement per send). A change made through the operator API of any server
 * process (a new pace, a rotated secret, a deleted channel) is announced and forgets the row at once
 * (ChannelsService); this bounds how long a copy lives should an announcement be lost.
 */
export const CHANNEL_CACHE_MS = 1000;

/**
 * Channel rows by business and id, each reused for CHANNEL_CACHE_MS. Only rows found are kept (an
 * unknown id is looked up again each time); concurrent lookups of one channel share one read.
 */
export class ChannelCache {
  private readonly rows = new Map<string, { at: number; row: Promise<ChannelRow | undefined> }>();

  constructor(
    private readonly find: (businessId: string, id: string) => Promise<ChannelRow | undefined>,
    private readonly ttlMs = CHANNEL_CACHE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get(businessId: string, id: string): Promise<ChannelRow | undefined> {
    // Keyed by business too: a channel id of another business is never served from here.
    const key = `${businessId}:${id}`;
    const cached = this.rows.get(key);
    if (cached && this.now() - cached.at < this.ttlMs) return cached.row;
    if (this.rows.size > 10_000) this.rows.clear();
    const row = this.find(businessId, id);
    const entry = { at: this.now(), row };
    this.rows.set(key, entry);
    const drop = () => {
      if (this.rows.get(key) === entry) this.rows.delete(key);
    };
    row.then((found) => found ?? drop(), drop);
    return row;
  }

  /** Reads every channel again on its next use. */
  clear(): void {
    this.rows.clear();
  }

  /** Reads the channel again on its next use. */
  forget(businessId: string, id: string): void {
    this.rows.delete(`${businessId}:${id}`);
  }
}
