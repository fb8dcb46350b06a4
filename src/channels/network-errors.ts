import type { ErrorClassification } from './channel.types.ts';

const timeoutCodes = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const networkCodes = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_ABORTED',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);

/**
 * Timeouts and transport failures (the request may or may not have reached the provider) are
 * retryable; returns null for anything else. Follows `cause` because undici and fetch wrap errors.
 */
export function classifyNetworkError(err: unknown): ErrorClassification | null {
  for (let current = err, depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (current.name === 'TimeoutError' || (typeof code === 'string' && timeoutCodes.has(code))) {
      return { retryable: true, code: 'timeout', detail: `provider did not answer in time: ${current.message}` };
    }
    if (current.name === 'AbortError' || (typeof code === 'string' && networkCodes.has(code))) {
      return { retryable: true, code: 'network_error', detail: `provider unreachable: ${current.message}` };
    }
    current = current.cause;
  }
  return null;
}
