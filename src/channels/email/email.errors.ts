import type { ErrorClassification } from '../channel.types.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { ProviderError } from '../provider-error.ts';

/**
 * The connection to the SMTP server failed after the send was started (beforeSend): the server
 * may have the mail though it never answered, so it is never sent again.
 */
export class SmtpDropped extends Error {
  override readonly name = 'SmtpDropped';
}

/** Nodemailer's codes of a connection that failed or timed out, the mail not handed over. */
const connectionCodes = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'EGREETING', 'ETLS', 'EPROXY']);

interface SmtpError {
  code?: unknown;
  responseCode?: unknown;
  response?: unknown;
  message?: unknown;
}

/**
 * SMTP failures: a reply of the server is final when permanent (5xx, RFC 5321; but 503, a command
 * out of sequence) and retryable when transient (4xx); a refused login is final; a connection that
 * failed or timed out before the send started is retryable, after it `mayHaveArrived`; a host the
 * address policy refused is final (classifyNetworkError).
 */
export function classifyEmailError(err: unknown): ErrorClassification {
  if (err instanceof ProviderError) return { retryable: err.retryable, code: err.code, detail: err.message };
  if (err instanceof SmtpDropped) {
    return {
      retryable: true,
      mayHaveArrived: true,
      code: 'network_error',
      detail: `connection to the SMTP server lost: ${err.message}`,
    };
  }
  const network = classifyNetworkError(err);
  if (network) return network;
  const e = (typeof err === 'object' && err !== null ? err : {}) as SmtpError;
  const detail = typeof e.response === 'string' ? e.response : typeof e.message === 'string' ? e.message : String(err);
  if (typeof e.responseCode === 'number') {
    const code = e.responseCode;
    const final = code >= 500 && code !== 503;
    return { retryable: !final, code: `smtp_${code}`, detail };
  }
  if (e.code === 'EAUTH') return { retryable: false, code: 'smtp_auth', detail };
  if (typeof e.code === 'string' && connectionCodes.has(e.code))
    return { retryable: true, code: 'network_error', detail: `SMTP server unreachable: ${detail}` };
  return { retryable: false, code: 'internal_error', detail };
}
