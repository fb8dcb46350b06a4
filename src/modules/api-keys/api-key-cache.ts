/**
 * Keys already resolved, so a request does not pay a database round trip to authenticate. Entries
 * live at most `ttlMs`; a revocation removes its entry at once in this process, and other processes
 * hear of it through the database's notifications. While those may be missed (the listening
 * connection is down), nothing is cached.
 *
 * A lookup that read the database before a revocation may answer after it: what it read is cached
 * only if nothing was removed since it began (`set` takes the `removals()` of its start), else the
 * revoked key would be cached again for a minute.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { businessId: string; expiresAt: number }>();
  private trusted: boolean;
  private removed = 0;

  constructor(
    options: { trusted: boolean },
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.trusted = options.trusted;
  }

  get(hash: string): string | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt > this.now()) return entry.businessId;
    this.entries.delete(hash);
    return undefined;
  }

  /** How many removals the cache has seen: taken before a lookup reads the database, for `set`. */
  removals(): number {
    return this.removed;
  }

  /** Caches what a lookup read, unless something was removed since it began (`readAt`). */
  set(hash: string, businessId: string, readAt: number): void {
    if (!this.trusted || readAt !== this.removed) return;
    // Oldest first out: a Map iterates in insertion order.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { businessId, expiresAt: this.now() + this.ttlMs });
  }

  delete(hash: string): void {
    this.removed += 1;
    this.entries.delete(hash);
  }

  /** Whether revocations are being heard; when they may not be, everything cached is dropped. */
  setTrusted(trusted: boolean): void {
    this.trusted = trusted;
    if (!trusted) {
      this.removed += 1;
      this.entries.clear();
    }
  }
}
