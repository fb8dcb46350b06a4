import type { ErrorClassification } from '../channel.types.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { ProviderError } from '../provider-error.ts';

// Graph API errors of every Meta product this service speaks (WhatsApp Cloud, Messenger, Instagram):
// one classification, since they share the error body and the generic codes.

/**
 * Graph error codes worth retrying: 130429 throughput exceeded, 131056 too many messages to one
 * recipient (pair rate), 131000 / 131016 service errors; also Graph's generic 1 / 2 (temporary
 * service trouble), 4 (app call rate), 613 (Messenger's send rate) and 80007 (WABA rate limit),
 * which Meta documents as "retry later".
 */
const retryableCodes = new Set([1, 2, 4, 613, 80007, 130429, 131000, 131016, 131056]);

/** Graph's code for an access token that expired, was revoked or is invalid: the channel needs a new one. */
export const TOKEN_REJECTED_CODE = 190;

/**
 * Codes that are final whatever the HTTP status: 131047 outside the 24-hour window (template
 * required), 131026 recipient cannot receive, 131030 recipient not allowed (test numbers),
 * 132000-132015 template problems, 100 invalid parameter, 190 expired or invalid token; Messenger's
 * 10 / 200 permission refused (outside the window without a tag, say) and 551 person unavailable.
 */
function isFinalCode(code: number): boolean {
  return (
    code === 10 ||
    code === 100 ||
    code === 190 ||
    code === 200 ||
    code === 551 ||
    code === 131026 ||
    code === 131030 ||
    code === 131047 ||
    (code >= 132000 && code <= 132015)
  );
}

/** Whether a Graph error may be retried: by code first, then 5xx and 429 are retryable, other 4xx final. */
export function isRetryableGraphError(code: number | undefined, httpStatus: number): boolean {
  if (code !== undefined) {
    if (retryableCodes.has(code)) return true;
    if (isFinalCode(code)) return false;
  }
  return httpStatus >= 500 || httpStatus === 429;
}

interface GraphErrorFields {
  message?: unknown;
  code?: unknown;
  error_subcode?: unknown;
  error_data?: { details?: unknown } | null;
}

/** Turn a non-2xx Graph answer (JSON error body or not) into a ProviderError. */
export function graphError(httpStatus: number, body: unknown): ProviderError {
  const error = (body as { error?: GraphErrorFields } | null)?.error;
  const code = typeof error?.code === 'number' ? error.code : undefined;
  if (!error || code === undefined) {
    return new ProviderError(
      `http_${httpStatus}`,
      `Graph API answered HTTP ${httpStatus}`,
      isRetryableGraphError(undefined, httpStatus),
      httpStatus,
      body,
    );
  }
  const message = typeof error.message === 'string' ? error.message : 'Graph API error';
  const details = typeof error.error_data?.details === 'string' ? error.error_data.details : undefined;
  const subcode = typeof error.error_subcode === 'number' ? ` (subcode ${error.error_subcode})` : '';
  const detail = `${message}${details && details !== message ? `: ${details}` : ''}${subcode}`;
  return new ProviderError(String(code), detail, isRetryableGraphError(code, httpStatus), httpStatus, body);
}

/** Classify anything a Graph API call can throw; a rejected token says the channel needs new credentials. */
export function classifyGraphError(err: unknown): ErrorClassification {
  if (err instanceof ProviderError) {
    const rejected = err.code === String(TOKEN_REJECTED_CODE);
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
