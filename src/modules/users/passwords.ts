import { hash, verify } from '@node-rs/argon2';
import { scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), which are also the library's defaults,
 * so its algorithm (Argon2id) is left to its default too: the const enum that names it cannot be read
 * under isolatedModules. Hashing and verifying run on libuv's thread pool, off the event loop.
 */
const ARGON2 = { memoryCost: 19456, timeCost: 2, parallelism: 1 };
const CURRENT_PREFIX = `$argon2id$v=19$m=${ARGON2.memoryCost},t=${ARGON2.timeCost},p=${ARGON2.parallelism}$`;

export async function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2);
}

/** Whether a stored hash was made otherwise than `hashPassword` makes one now (scrypt, other parameters). */
export const needsRehash = (stored: string): boolean => !stored.startsWith(CURRENT_PREFIX);

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash` (base64url parts), the form users' passwords were stored in before Argon2id. */
async function verifyScrypt(stored: string, password: string): Promise<boolean> {
  const [, n, r, p, salt, expected] = stored.split('$');
  const [N, rr, pp] = [Number(n), Number(r), Number(p)];
  if (![N, rr, pp].every(Number.isInteger) || !salt || !expected) return false;
  const want = Buffer.from(expected, 'base64url');
  const got = await scryptAsync(password, Buffer.from(salt, 'base64url'), want.length, {
    N,
    r: rr,
    p: pp,
    maxmem: 256 * N * rr + 1024 * 1024,
  });
  return want.length > 0 && timingSafeEqual(got, want);
}

let decoy: Promise<string> | undefined;

/**
 * Whether `password` is the one `stored` was made from. Without a stored hash (an unknown email, a
 * user invited but not yet signed up) a decoy hash is verified instead, so the answer takes as long.
 */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  if (!stored) {
    decoy ??= hashPassword('a password no account has');
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  if (stored.startsWith('scrypt$')) return verifyScrypt(stored, password);
  return verify(stored, password).catch(() => false);
}
