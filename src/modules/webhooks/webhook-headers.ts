import { invalid } from '../../lib/domain-errors.ts';

/**
 * Header names a business may not set: ours (the signature scheme and the body's framing) and the
 * ones that describe the connection rather than the call. Refused with 400 rather than silently dropped.
 */
export const RESERVED_HEADERS = [
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'host',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
] as const;

const reserved = new Set<string>(RESERVED_HEADERS);

/** Most custom headers per webhook. */
export const MAX_HEADERS = 20;

/** Checks custom headers (names are compared case-insensitively) and returns them as given. */
export function checkCustomHeaders(headers: Record<string, string>): Record<string, string> {
  const seen = new Set<string>();
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    if (reserved.has(lower))
      throw invalid(`header ${name} is set by the service and cannot be configured`, [{ path: `/headers/${name}` }]);
    if (seen.has(lower)) throw invalid(`header ${name} is given twice`, [{ path: `/headers/${name}` }]);
    seen.add(lower);
  }
  return headers;
}
