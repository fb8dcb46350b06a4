import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from 'typebox';
import type { IncomingHeaders } from '../channel.types.ts';

/** The header Meta signs notifications with. */
export const SIGNATURE_HEADER = 'x-hub-signature-256';

/**
 * Whether `X-Hub-Signature-256: sha256=<hex>` is the HMAC-SHA256 of the raw body with the app
 * secret. Compares the digests' bytes in constant time; a missing, repeated or malformed header fails.
 */
export function verifyMetaSignature(rawBody: Buffer, headers: IncomingHeaders, appSecret: string): boolean {
  const header = headers[SIGNATURE_HEADER];
  if (typeof header !== 'string' || !appSecret) return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match) return false;
  const expected = createHmac('sha256', appSecret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(match[1], 'hex'));
}

/** The header value Meta would send for this body (used by fakes and tests that play Meta). */
export function signMetaBody(rawBody: Buffer | string, appSecret: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`;
}

/**
 * Meta's webhook verification (`GET ?hub.mode=subscribe&hub.verify_token=...&hub.challenge=...`):
 * the challenge to echo with 200 when the mode is `subscribe` and the token matches, else null (403).
 */
export function answerHubChallenge(query: Record<string, unknown>, verifyToken: string): string | null {
  const mode = query['hub.mode'];
  const token = query['hub.verify_token'];
  const challenge = query['hub.challenge'];
  if (
    mode !== 'subscribe' ||
    typeof token !== 'string' ||
    typeof challenge !== 'string' ||
    !challenge ||
    !verifyToken
  ) {
    return null;
  }
  // Hash both sides so the comparison is constant time whatever the lengths.
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(token), digest(verifyToken)) ? challenge : null;
}

/** The webhook handshake of every Meta product: the hub.* query, answered by the channel of the verify token. */
export const metaHandshake = {
  query: Type.Object({
    'hub.mode': Type.Optional(Type.String({ maxLength: 50 })),
    'hub.verify_token': Type.Optional(Type.String({ maxLength: 256 })),
    'hub.challenge': Type.Optional(Type.String({ maxLength: 256 })),
  }),
  lookupField: 'verify_token',
  token: (query: Record<string, unknown>) => query['hub.verify_token'],
};

/** The handshake's documentation, naming the product whose channels answer it. */
export const metaHandshakeDocs = (product: string) => ({
  summary: "Meta's webhook verification (hub.challenge)",
  description: `Answers 200 with hub.challenge as text/plain when hub.mode is subscribe and hub.verify_token is a ${product} channel's verify_token; 403 otherwise.`,
});
