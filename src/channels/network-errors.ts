import { SsrfError } from '../net/ssrf-guard.ts';
import type { ErrorClassification } from './channel.types.ts';

/** Failures before the connection was made: the request cannot have reached the provider. */
const connectCodes = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);
/** Failures that may come after the request was written: it may have reached the provider. */
const timeoutCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const droppedCodes = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_ABORTED',
  'ECONNRESET',
  'EPIPE',
]);

/**
 * A target refused by the address policy (src/net/ssrf-guard.ts) is final: nothing was sent, and
 * the same address would be refused again. Timeouts and transport failures are retryable; those
 * that may come after the request was written (a timeout waiting for the answer, a connection
 * dropped) are marked `mayHaveArrived`, since the provider may have acted on it. Returns null for
 * anything else. Follows `cause` because undici and fetch wrap errors.
 */
export function classifyNetworkError(err: unknown): ErrorClassification | null {
  for (let current = err, depth = 0; current instanceof Error && depth < 5; depth++) {
    if (current instanceof SsrfError) {
      return { retryable: false, code: 'target_refused', detail: `provider address refused: ${current.message}` };
    }
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && connectCodes.has(code)) {
      return { retryable: true, code: 'network_error', detail: `provider unreachable: ${current.message}` };
    }
    if (current.name === 'TimeoutError' || (typeof code === 'string' && timeoutCodes.has(code))) {
      return {
        retryable: true,
        mayHaveArrived: true,
        code: 'timeout',
        detail: `provider did not answer in time: ${current.message}`,
      };
    }
    if (current.name === 'AbortError' || (typeof code === 'string' && droppedCodes.has(code))) {
      return {
        retryable: true,
        mayHaveArrived: true,
        code: 'network_error',
        detail: `connection to the provider lost: ${current.message}`,
      };
    }
    current = current.cause;
  }
  return null;
}
