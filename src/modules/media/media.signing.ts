import { createHmac } from 'node:crypto';
import { signedByAny, type SecretKeys } from '../../lib/secret-keys.ts';

/** How long a signed media address stays valid (the contract: 120 minutes). */
export const MEDIA_URL_LIFETIME_SECONDS = 120 * 60;

/** What signs media addresses: the service's secrets (the first signs) and the public base URL. */
export interface MediaSigningKey {
  secretKeys: SecretKeys;
  publicUrl: string;
}

/** A signed download address and when it stops working (ISO 8601, microseconds). */
export interface SignedMediaUrl {
  url: string;
  expiresAt: string;
}

// The secret also signs cursors: the "media" prefix keeps one kind of signature from passing as another.
function signature(secretKey: string, businessId: string, mediaId: string, exp: number): string {
  return createHmac('sha256', secretKey).update(`media\n${businessId}\n${mediaId}\n${exp}`).digest('base64url');
}

/**
 * A fresh signed address of a stored file: `${PUBLIC_URL}/files/<id>?b=<business>&exp=<unix>&sig=<HMAC>`,
 * valid 120 minutes from `now` (ms since the epoch).
 */
export function signedMediaUrl(
  key: MediaSigningKey,
  businessId: string,
  mediaId: number | string,
  now: number = Date.now(),
): SignedMediaUrl {
  const exp = Math.floor(now / 1000) + MEDIA_URL_LIFETIME_SECONDS;
  const sig = signature(key.secretKeys[0], businessId, String(mediaId), exp);
  const query = new URLSearchParams({ b: businessId, exp: String(exp), sig });
  return {
    url: `${key.publicUrl}/files/${encodeURIComponent(String(mediaId))}?${query.toString()}`,
    expiresAt: new Date(exp * 1000).toISOString().replace(/\.\d{3}Z$/, '.000000Z'),
  };
}

/** Whether a file address's signature is ours, by any of the keys, and unexpired (compared in constant time). */
export function verifyMediaSignature(
  secretKeys: SecretKeys,
  input: { mediaId: string; businessId?: string; exp?: string; sig?: string },
  now: number = Date.now(),
): boolean {
  const { mediaId, businessId, exp, sig } = input;
  if (!businessId || !exp || !sig || !/^[0-9]{1,12}$/.test(exp)) return false;
  if (!signedByAny(secretKeys, (key) => signature(key, businessId, mediaId, Number(exp)), sig)) return false;
  return Number(exp) * 1000 > now;
}
