import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHeaders } from '../channel.types.ts';

/** The header TikTok signs its webhook events with. */
export const SIGNATURE_HEADER = 'tiktok-signature';

/** How far a signature's time may be from the service's clock: older (or later) events are refused as replays. */
export const MAX_SIGNATURE_SKEW_SECONDS = 5 * 60;

/** The HMAC-SHA256, keyed by the app secret, of `<t>.<raw body>`: TikTok's signature of an event sent at `t`. */
function signatureOf(appSecret: string, t: string, rawBody: Buffer | string): Buffer {
  return createHmac('sha256', appSecret).update(`${t}.`).update(rawBody).digest();
}

/**
 * Whether `Tiktok-Signature: t=<unix seconds>,s=<hex>` signs the raw body with the app secret, at a
 * time within MAX_SIGNATURE_SKEW_SECONDS of `nowSeconds`. Compares the digests in constant time; a
 * missing, repeated or malformed header fails.
 */
export function verifyTikTokSignature(
  rawBody: Buffer,
  headers: IncomingHeaders,
  appSecret: string,
  nowSeconds = Date.now() / 1000,
): boolean {
  const header = headers[SIGNATURE_HEADER];
  if (typeof header !== 'string' || !appSecret) return false;
  const parts = new Map<string, string>();
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at > 0) parts.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  const t = parts.get('t');
  const s = parts.get('s');
  if (!t || !/^[0-9]{1,12}$/.test(t) || !s || !/^[0-9a-fA-F]{64}$/.test(s)) return false;
  if (Math.abs(nowSeconds - Number(t)) > MAX_SIGNATURE_SKEW_SECONDS) return false;
  return timingSafeEqual(signatureOf(appSecret, t, rawBody), Buffer.from(s, 'hex'));
}

/** The header value TikTok would send for this body at `t` (used by fakes and tests that play TikTok). */
export function signTikTokBody(rawBody: Buffer | string, appSecret: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},s=${signatureOf(appSecret, String(t), rawBody).toString('hex')}`;
}
