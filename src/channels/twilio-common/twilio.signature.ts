import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHeaders } from '../channel.types.ts';
import type { FormParams } from './twilio.form.ts';

/** The header Twilio signs its requests with. */
export const SIGNATURE_HEADER = 'x-twilio-signature';

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed by the auth token, of the full URL Twilio
 * called followed by each POST parameter's name and value in name order (a repeated name's values
 * in the order sent).
 */
export function twilioSignature(authToken: string, url: string, params: FormParams): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name];
    for (const v of Array.isArray(value) ? value : [value]) data += name + v;
  }
  return createHmac('sha1', authToken).update(Buffer.from(data, 'utf8')).digest('base64');
}

/** Whether the request's `X-Twilio-Signature` is the signature of `url` and `params` (constant time). */
export function verifyTwilioSignature(
  authToken: string,
  url: string,
  params: FormParams,
  headers: IncomingHeaders,
): boolean {
  const header = headers[SIGNATURE_HEADER];
  if (typeof header !== 'string' || !/^[A-Za-z0-9+/]{27}=$/.test(header.trim()) || !authToken) return false;
  const given = Buffer.from(header.trim(), 'base64');
  return signedUrls(url).some((signed) =>
    timingSafeEqual(Buffer.from(twilioSignature(authToken, signed, params), 'base64'), given),
  );
}

/**
 * The URL as given and with its port written out or left out: Twilio signs the URL as it called
 * it, with or without the port depending on how the webhook was configured (its own libraries
 * accept both).
 */
function signedUrls(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [url];
  }
  if (parsed.port === '') {
    // URL drops a default port when one is set, so it is written into the text instead.
    const defaultPort = parsed.protocol === 'https:' ? '443' : '80';
    return [url, url.replace(parsed.host, `${parsed.hostname}:${defaultPort}`)];
  }
  parsed.port = '';
  return [url, parsed.toString()];
}
