import { timingSafeEqual } from 'node:crypto';

/**
 * The service's secrets, current first: SECRET_KEY signs cursors and media links and seals stored
 * secrets; the fallbacks (SECRET_KEY_FALLBACKS) are still accepted to verify and to open, so that
 * the key can be rotated without breaking what the old one signed or sealed.
 */
export type SecretKeys = readonly [current: string, ...fallbacks: string[]];

/**
 * Whether `given` is the signature one of the keys makes (`sign`), compared in constant time, as
 * text (base64url decoding would ignore some bits of the last character). Every key is tried, so
 * the time does not tell which one matched.
 */
export function signedByAny(keys: SecretKeys, sign: (key: string) => string, given: string): boolean {
  const givenBytes = Buffer.from(given);
  let matched = false;
  for (const key of keys) {
    const expected = Buffer.from(sign(key));
    if (expected.length === givenBytes.length && timingSafeEqual(expected, givenBytes)) matched = true;
  }
  return matched;
}
