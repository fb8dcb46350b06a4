import type { ErrorClassification } from '../channel.types.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { ProviderError } from '../provider-error.ts';

/** The recipient replied STOP to this sender: Twilio refuses every message to them until they reply START. */
export const UNSUBSCRIBED_RECIPIENT = 21610;

/**
 * Twilio error codes worth retrying: 20429 too many requests, 30001 queue overflow, 20500 and
 * 20503 Twilio's own trouble.
 */
const retryableCodes = new Set([20429, 30001, 20500, 20503]);

/**
 * Codes that are final whatever the HTTP status: 20003 authentication, 20404 unknown resource,
 * 21211 invalid To, 21408 region not enabled, 21606 / 21660 From not the account's, 21610
 * unsubscribed recipient, 21612 / 21614 unreachable or not mobile, 21617 body too long, 30002-30007
 * account suspended, unreachable, blocked, unknown, landline or filtered.
 */
const finalCodes = new Set([20003, 20404, 21211, 21408, 21606, 21610, 21612, 21614, 21617, 21660]);
const isFinalCode = (code: number) => finalCodes.has(code) || (code >= 30002 && code <= 30007);

/** Whether a Twilio error may be retried: by code first, then 5xx and 429 are retryable, other 4xx final. */
export function isRetryableTwilioError(code: number | undefined, httpStatus: number): boolean {
  if (code !== undefined) {
    if (retryableCodes.has(code)) return true;
    if (isFinalCode(code)) return false;
  }
  return httpStatus >= 500 || httpStatus === 429;
}

/** Turn a non-2xx Twilio answer (`{code, message, more_info, status}` or not) into a ProviderError. */
export function twilioError(httpStatus: number, body: unknown): ProviderError {
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const code = typeof fields.code === 'number' ? fields.code : undefined;
  if (code === undefined) {
    return new ProviderError(
      `http_${httpStatus}`,
      `Twilio answered HTTP ${httpStatus}`,
      isRetryableTwilioError(undefined, httpStatus),
      httpStatus,
      body,
    );
  }
  const message = typeof fields.message === 'string' ? fields.message : 'Twilio error';
  const more = typeof fields.more_info === 'string' ? ` (${fields.more_info})` : '';
  return new ProviderError(
    String(code),
    `${message}${more}`,
    isRetryableTwilioError(code, httpStatus),
    httpStatus,
    body,
  );
}

/** Classify anything a Twilio call can throw. */
export function classifyTwilioError(err: unknown): ErrorClassification {
  if (err instanceof ProviderError) {
    return {
      retryable: err.retryable,
      code: err.code,
      detail: err.message,
      ...(err.code === String(UNSUBSCRIBED_RECIPIENT) ? { recipientOptedOut: true } : {}),
    };
  }
  const network = classifyNetworkError(err);
  if (network) return network;
  // Not a provider answer nor transport trouble: a bug of ours, which a retry would repeat.
  return { retryable: false, code: 'internal_error', detail: err instanceof Error ? err.message : String(err) };
}
