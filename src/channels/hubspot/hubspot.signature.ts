import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHeaders } from '../channel.types.ts';

/** The headers HubSpot signs its webhook requests with (v3). */
export const SIGNATURE_HEADER = 'x-hubspot-signature-v3';
export const TIMESTAMP_HEADER = 'x-hubspot-request-timestamp';

/** HubSpot's bound on a request's age: an older one is refused, so a captured request cannot be replayed later. */
export const MAX_AGE_MS = 5 * 60 * 1000;

/**
 * HubSpot's v3 request signature: base64 HMAC-SHA256, keyed by the app's client secret, of the
 * method, the full URL it called, the raw body and the request's timestamp (milliseconds), joined.
 */
export function hubSpotSignature(clientSecret: string, method: string, url: string, body: Buffer, timestamp: string) {
  return createHmac('sha256', clientSecret)
    .update(Buffer.concat([Buffer.from(`${method}${url}`, 'utf8'), body, Buffer.from(timestamp, 'utf8')]))
    .digest('base64');
}

/**
 * Whether the request's `X-HubSpot-Signature-v3` signs `url` and the raw body with its timestamp
 * (constant time), and that timestamp is at most five minutes old.
 */
export function verifyHubSpotSignature(
  clientSecret: string,
  url: string,
  body: Buffer,
  headers: IncomingHeaders,
  now = Date.now(),
): boolean {
  const header = headers[SIGNATURE_HEADER];
  const timestamp = headers[TIMESTAMP_HEADER];
  if (typeof header !== 'string' || typeof timestamp !== 'string' || !clientSecret) return false;
  if (!/^[0-9]{1,15}$/.test(timestamp) || Math.abs(now - Number(timestamp)) > MAX_AGE_MS) return false;
  if (!/^[A-Za-z0-9+/]{43}=$/.test(header.trim())) return false;
  const expected = Buffer.from(hubSpotSignature(clientSecret, 'POST', url, body, timestamp), 'base64');
  return timingSafeEqual(expected, Buffer.from(header.trim(), 'base64'));
}
