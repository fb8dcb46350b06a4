import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.ts';
import { notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import type { ApiKeyCache } from './api-key-cache.ts';
import { apiKeysRepository } from './api-keys.repository.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 base62 characters carry 256 bits. */
const KEY_LENGTH = 43;
export const API_KEY_PATTERN = /^mk_live_[0-9A-Za-z]{43}$/;

/** Uniform base62 by rejection sampling (bytes >= 248 are dropped so no character is favoured). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * Only the SHA-256 of a key is stored. A key has 256 bits of entropy, so a fast hash is enough and
 * a lookup by hash is one index probe; nothing secret is compared byte by byte in JS.
 */
const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** A key's last use is written at most this often per process. */
const LAST_USE_EVERY_MS = 60_000;
/** Keys whose last write this process remembers; beyond it the memory starts over (a few extra writes). */
const LAST_USE_MEMORY = 10_000;

export class ApiKeysService {
  /** When this process last wrote each key's last use (by hash). */
  private readonly lastUseWritten = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly cache: ApiKeyCache,
    private readonly now: () => number = Date.now,
  ) {}

  async create(businessId: string, name: string | undefined) {
    const key = `mk_live_${randomBase62(KEY_LENGTH)}`;
    const apiKey = await apiKeysRepository.insert(this.db, {
      business_id: businessId,
      id: newId(),
      name: name ?? 'API key',
      prefix: key.slice(0, 12),
      key_hash: hashKey(key),
    });
    return { apiKey, key };
  }

  /** The business of a valid, unrevoked key; malformed keys are refused without a query. */
  async resolve(key: string): Promise<string | undefined> {
    if (!API_KEY_PATTERN.test(key)) return undefined;
    const hash = hashKey(key);
    const cached = this.cache.get(hash);
    if (cached) {
      this.noteUse(hash, cached);
      return cached;
    }
    const readAt = this.cache.removals();
    const businessId = await apiKeysRepository.businessOfHash(this.db, hash);
    if (businessId) {
      this.cache.set(hash, businessId, readAt);
      this.noteUse(hash, businessId);
    }
    return businessId;
  }

  /**
   * Writes the key's last use at most once a minute, without holding up the request: the time is
   * shown to people, so a write lost to a failing database costs nothing but a stale minute.
   */
  private noteUse(hash: string, businessId: string): void {
    const now = this.now();
    const written = this.lastUseWritten.get(hash);
    if (written !== undefined && now - written < LAST_USE_EVERY_MS) return;
    if (this.lastUseWritten.size >= LAST_USE_MEMORY) this.lastUseWritten.clear();
    this.lastUseWritten.set(hash, now);
    apiKeysRepository.markUsed(this.db, businessId, hash).catch(() => this.lastUseWritten.delete(hash));
  }

  /** A key revoked by another server process: forget it here too. */
  forgetRevoked(hash: string): void {
    this.cache.delete(hash);
  }

  /** The business's keys, newest first; at most 500 (a business holds far fewer). */
  list(businessId: string, limit = 500) {
    return apiKeysRepository.list(this.db, businessId, limit);
  }

  async revoke(businessId: string, id: string): Promise<void> {
    const hash = await apiKeysRepository.revoke(this.db, businessId, id);
    if (!hash) throw notFound('API key');
    this.cache.delete(hash);
  }
}
