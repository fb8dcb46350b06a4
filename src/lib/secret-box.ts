import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { SecretKeys } from './secret-keys.ts';

/** The mark of a sealed value; what does not carry it was stored before sealing (read as it is). */
const SECRET_PREFIX = 'sb1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Secrets the service must be able to read back (a provider's access token, a webhook's signing
 * secret), stored encrypted with a key derived from SECRET_KEY, so a copy of the database (a
 * backup, a dump, a replica) does not hold them in the clear. AES-256-GCM from node:crypto: each
 * value gets a random IV, and the tag makes a changed ciphertext fail to open rather than read as
 * something else. A value is `sb1.` + base64url(iv | tag | ciphertext).
 *
 * A value looked up by its content (Meta's verify token names no channel) is found by its digest,
 * an HMAC with another derived key: equal values have equal digests, and the digest reveals
 * nothing of the value without the key.
 *
 * Values are sealed with SECRET_KEY and open with it or with one of SECRET_KEY_FALLBACKS (tried in
 * turn: the tag tells a wrong key at once), so the key can be rotated: `reseal` moves a value to
 * the current key, and the services do so for everything stored at start. A value no key opens
 * fails (SecretBoxError).
 */
export class SecretBox {
  /** Per key, current first: the AES key and the HMAC key derived for this purpose. */
  private readonly keys: readonly { encrypt: Buffer; digest: Buffer }[];

  constructor(secretKeys: SecretKeys, purpose: string) {
    this.keys = secretKeys.map((secretKey) => ({
      encrypt: Buffer.from(hkdfSync('sha256', secretKey, '', `${purpose}:encrypt`, 32)),
      digest: Buffer.from(hkdfSync('sha256', secretKey, '', `${purpose}:digest`, 32)),
    }));
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0].encrypt, iv);
    const encrypted = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return SECRET_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), encrypted]).toString('base64url');
  }

  /** The plain value of a sealed one; a value stored before sealing is returned as it is. */
  open(value: string): string {
    if (!isSealed(value)) return value;
    for (const { encrypt } of this.keys) {
      const plain = openWith(encrypt, value);
      if (plain !== undefined) return plain;
    }
    throw new SecretBoxError();
  }

  /** Whether a stored value is sealed with the current key (nothing to do for `reseal`). */
  isCurrent(value: string): boolean {
    return isSealed(value) && openWith(this.keys[0].encrypt, value) !== undefined;
  }

  /** The value sealed with the current key: itself if it is, else opened and sealed again. */
  reseal(value: string): string {
    return this.isCurrent(value) ? value : this.seal(this.open(value));
  }

  /** The digest under the current key, the one to store. */
  digest(plain: string): string {
    return this.digests(plain)[0];
  }

  /** The digests under every key, current first: a lookup finds values digested before a rotation. */
  digests(plain: string): string[] {
    return this.keys.map(({ digest }) => createHmac('sha256', digest).update(plain, 'utf8').digest('base64url'));
  }
}

/** Whether a stored value is sealed, rather than stored in the clear by an earlier version. */
function isSealed(value: string): boolean {
  return value.startsWith(SECRET_PREFIX);
}

/** The plain value of a sealed one under one key, or undefined if the key does not open it. */
function openWith(key: Buffer, value: string): string | undefined {
  const bytes = Buffer.from(value.slice(SECRET_PREFIX.length), 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

export class SecretBoxError extends Error {
  constructor() {
    super(
      'a stored secret does not open with SECRET_KEY nor any of SECRET_KEY_FALLBACKS (was SECRET_KEY changed without keeping the old one as a fallback?)',
    );
    this.name = 'SecretBoxError';
  }
}

/** What a start-up pass that seals stored secrets with the current key did. */
export interface SealCounts {
  /** Rows sealed again (in the clear before, or sealed with a fallback key). */
  sealed: number;
  /** Rows holding a secret that no key opens, left as they are. */
  unopened: number;
}

/**
 * A start-up pass that seals stored secrets with the current key, page by page in keyset order:
 * `page` reads the rows after the last one, `reseal` answers a row's secrets sealed with the current
 * key (undefined when they are already; SecretBoxError when no key opens one: counted, left as it
 * is), and `store` writes them if the row is still as it was read (false when another writer came
 * between: a rotation meanwhile seals already).
 */
export async function resealStored<R, S>(
  page: (after: R | undefined) => Promise<R[]>,
  reseal: (row: R) => S | undefined,
  store: (row: R, sealed: S) => Promise<boolean>,
): Promise<SealCounts> {
  const counts = { sealed: 0, unopened: 0 };
  for (let rows = await page(undefined); rows.length > 0; rows = await page(rows.at(-1))) {
    for (const row of rows) {
      let sealed: S | undefined;
      try {
        sealed = reseal(row);
      } catch (err) {
        if (!(err instanceof SecretBoxError)) throw err;
        counts.unopened += 1;
        continue;
      }
      if (sealed !== undefined && (await store(row, sealed))) counts.sealed += 1;
    }
  }
  return counts;
}
