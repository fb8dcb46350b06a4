import type { ErrorClassification } from '../channel.types.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { ProviderError } from '../provider-error.ts';

// TikTok's Business API answers errors in its envelope, `{code, message, request_id, data}` with a
// code other than 0, mostly with HTTP 200.

/** 40100: too many requests (the app's or the endpoint's QPS); 50000 / 50002: TikTok's system errors. */
const RETRYABLE_CODES = new Set([40100, 50000, 50002]);

/** 40101: the app's id or secret refused; 40104: no access token; 40105: the access token is wrong or revoked. */
const CREDENTIAL_CODES = new Set([40101, 40104, 40105]);

/** 40102: the access token expired; the adapter renews it before the next attempt. */
export const TOKEN_EXPIRED_CODE = 40102;

/** Our code for a token renewal TikTok refused (an expired or revoked refresh token, a wrong app secret). */
export const REFRESH_REFUSED = 'refresh_refused';

/** Whether an answer's code may be retried: by code first, then 5xx and 429 are retryable, the rest final. */
function isRetryable(code: number | undefined, httpStatus: number): boolean {
  if (code !== undefined) {
    if (RETRYABLE_CODES.has(code) || code === TOKEN_EXPIRED_CODE) return true;
    if (CREDENTIAL_CODES.has(code)) return false;
  }
  return httpStatus >= 500 || httpStatus === 429;
}

/** A TikTok error answer (its envelope, or a body that is none) as a ProviderError. */
export function tiktokError(httpStatus: number, body: unknown): ProviderError {
  const envelope = typeof body === 'object' && body !== null ? (body as { code?: unknown; message?: unknown }) : {};
  const code = typeof envelope.code === 'number' && envelope.code !== 0 ? envelope.code : undefined;
  if (code === undefined)
    return new ProviderError(
      `http_${httpStatus}`,
      `TikTok answered HTTP ${httpStatus}`,
      isRetryable(undefined, httpStatus),
      httpStatus,
      body,
    );
  const message = typeof envelope.message === 'string' && envelope.message !== '' ? envelope.message : 'TikTok error';
  return new ProviderError(String(code), message, isRetryable(code, httpStatus), httpStatus, body);
}

/** A refused renewal of the tokens: final, and the channel needs new credentials. */
export function refreshRefused(cause: ProviderError): ProviderError {
  return new ProviderError(
    REFRESH_REFUSED,
    `TikTok refused to renew the access token (${cause.code}: ${cause.message})`,
    false,
    cause.httpStatus,
    cause.providerBody,
  );
}

/**
 * Classify anything a TikTok call can throw. A refused token or app secret, and a refused renewal,
 * say the channel needs new credentials; an expired token is retried (the adapter renews it first).
 */
export function classifyTikTokError(err: unknown): ErrorClassification {
  if (err instanceof ProviderError) {
    const rejected = err.code === REFRESH_REFUSED || CREDENTIAL_CODES.has(Number(err.code));
    return {
      retryable: err.retryable,
      code: err.code,
      detail: err.message,
      ...(rejected ? { credentialsRejected: true } : {}),
    };
  }
  const network = classifyNetworkError(err);
  if (network) return network;
  // Not a provider answer nor transport trouble: a bug of ours, which a retry would repeat.
  return { retryable: false, code: 'internal_error', detail: err instanceof Error ? err.message : String(err) };
}
