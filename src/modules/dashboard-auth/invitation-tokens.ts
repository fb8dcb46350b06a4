import { createHmac, randomBytes } from 'node:crypto';
import { signedByAny, type SecretKeys } from '../../lib/secret-keys.ts';

// The secret also signs cursors and media addresses: the prefix keeps one kind of signature from passing as another.
const signature = (key: string, nonce: string, exp: string) =>
  createHmac('sha256', key).update(`dashboard-invitation\n${nonce}.${exp}`).digest('base64url');

/**
 * An invitation token, `<nonce>.<exp>.<signature>`: 24 random bytes, the end of its validity (unix
 * seconds) and an HMAC-SHA256 of both under SECRET_KEY. The signature refuses a made-up or altered
 * token, or an expired one, before any lookup; the stored digest makes it single-use.
 */
export function newInvitationToken(secretKeys: SecretKeys, expiresAtMs: number): string {
  const nonce = randomBytes(24).toString('base64url');
  const exp = String(Math.floor(expiresAtMs / 1000));
  return `${nonce}.${exp}.${signature(secretKeys[0], nonce, exp)}`;
}

/** Whether a token is one of ours (signed by any of the keys, compared in constant time) and unexpired. */
export function readInvitationToken(
  secretKeys: SecretKeys,
  token: string,
  now: number,
): 'valid' | 'expired' | 'invalid' {
  const match = /^([A-Za-z0-9_-]{32})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return 'invalid';
  const [, nonce, exp, sig] = match;
  if (!signedByAny(secretKeys, (key) => signature(key, nonce, exp), sig)) return 'invalid';
  return Number(exp) * 1000 > now ? 'valid' : 'expired';
}
