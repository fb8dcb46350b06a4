import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/** The mark of a sealed value; what does not carry it was stored before sealing (read as it is). */
export const SECRET_PREFIX = 'sb1.';
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
 * SECRET_KEY must stay the same for the life of the data: with another key, sealed values do not
 * open (and cursors and media links already signed do not verify).
 */
export class SecretBox {
  private readonly key: Buffer;
  private readonly digestKey: Buffer;

  constructor(secretKey: string, purpose: string) {
    this.key = Buffer.from(hkdfSync('sha256', secretKey, '', `${purpose}:encrypt`, 32));
    this.digestKey = Buffer.from(hkdfSync('sha256', secretKey, '', `${purpose}:digest`, 32));
  }

  static isSealed(value: string): boolean {
    return value.startsWith(SECRET_PREFIX);
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const encrypted = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return SECRET_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), encrypted]).toString('base64url');
  }

  /** The plain value of a sealed one; a value stored before sealing is returned as it is. */
  open(value: string): string {
    if (!SecretBox.isSealed(value)) return value;
    const bytes = Buffer.from(value.slice(SECRET_PREFIX.length), 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError();
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError();
    }
  }

  digest(plain: string): string {
    return createHmac('sha256', this.digestKey).update(plain, 'utf8').digest('base64url');
  }
}

export class SecretBoxError extends Error {
  constructor() {
    super('a stored secret does not open with this SECRET_KEY (was SECRET_KEY changed?)');
    this.name = 'SecretBoxError';
  }
}
