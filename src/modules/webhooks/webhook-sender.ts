import { request, type Dispatcher } from 'undici';
import { checkTargetUrl, SsrfError, type TargetPolicy } from '../../net/ssrf-guard.ts';
import { targetRefusal } from '../../net/target-refusal.ts';
import type { ClaimedDelivery } from './webhook-deliveries.repository.ts';
import { parseRetryAfter } from './webhook-schedule.ts';
import { signatureHeaders } from './webhook-signing.ts';

/** Whole-call limit of one attempt. */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** What the log keeps of an answer. */
export const LOGGED_BODY_BYTES = 1024;
/** Read at most this much of an answer; past it the connection is dropped. */
const READ_LIMIT_BYTES = 64 * 1024;

/** What one attempt came to. `verdict`: delivered, retry later, final failure, or the endpoint is gone (410). */
export interface AttemptResult {
  verdict: 'delivered' | 'retry' | 'final' | 'gone';
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseBody: string | null;
  retryAfterMs: number | null;
}

/** Whether an HTTP status is worth another attempt (Standard Webhooks and Svix: 408, 429, 5xx). */
const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

async function readBeginning(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    if (size < LOGGED_BODY_BYTES) chunks.push(buf);
    size += buf.length;
    if (size > READ_LIMIT_BYTES) {
      body.destroy();
      break;
    }
  }
  // Cut on bytes, then drop a partial character at the end.
  return Buffer.concat(chunks)
    .subarray(0, LOGGED_BODY_BYTES)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
}

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof SsrfError) return `refused target: ${targetRefusal(err)}`;
  for (let current = err, depth = 0; current instanceof Error && depth < 5; depth++) {
    if (current instanceof SsrfError) return `refused target: ${targetRefusal(current)}`;
    if (current.name === 'TimeoutError') return `timeout: no answer within ${timeoutMs / 1000} s`;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && current.cause === undefined)
      return `network error: ${code} ${current.message}`.slice(0, 500);
    current = current.cause;
  }
  return `network error: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500);
}

/**
 * One signed call for a delivery: body `{"event","payload"}`, the business's headers, then ours
 * (they win over custom ones), redirects not followed (a 3xx is a final failure). The target is
 * checked again before the call, and the connection itself is guarded by the dispatcher.
 */
export async function sendAttempt(
  delivery: ClaimedDelivery,
  options: {
    dispatcher: Dispatcher;
    policy: TargetPolicy;
    nowMs: number;
    signal: AbortSignal;
    elapsed: () => number;
    timeoutMs?: number;
  },
): Promise<AttemptResult> {
  const started = options.elapsed();
  const result = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({
    ...r,
    durationMs: Math.max(0, Math.round(options.elapsed() - started)),
  });
  const body = JSON.stringify({ event: delivery.event, payload: delivery.payload });
  try {
    const url = await checkTargetUrl(delivery.url, options.policy);
    const headers = {
      'user-agent': 'messaging-api-webhooks/1',
      ...delivery.headers,
      'content-type': 'application/json',
      ...signatureHeaders(
        {
          secret: delivery.secret,
          previousSecret: delivery.previous_secret,
          previousSecretExpiresAt: delivery.previous_secret_expires_at,
        },
        delivery.id,
        options.nowMs,
        body,
      ),
    };
    const timeout = AbortSignal.timeout(options.timeoutMs ?? ATTEMPT_TIMEOUT_MS);
    // Node keeps a timeout signal alive only while it has a listener: one that only a composite follows
    // can be collected before it fires, and the call would then never end (nodejs/node#57736).
    timeout.addEventListener('abort', () => undefined, { once: true });
    const response = await request(url, {
      method: delivery.method,
      headers,
      body,
      dispatcher: options.dispatcher,
      signal: AbortSignal.any([options.signal, timeout]),
    });
    const responseBody = await readBeginning(response.body);
    const status = response.statusCode;
    if (status >= 200 && status < 300)
      return result({ verdict: 'delivered', statusCode: status, error: null, responseBody, retryAfterMs: null });
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], options.nowMs);
    const error = status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`;
    const verdict = status === 410 ? 'gone' : retryable(status) ? 'retry' : 'final';
    return result({ verdict, statusCode: status, error, responseBody, retryAfterMs });
  } catch (err) {
    if (options.signal.aborted) throw err;
    // A refused target stays refused until someone changes the URL or its DNS: retried like a network error.
    return result({
      verdict: 'retry',
      statusCode: null,
      error: describe(err, options.timeoutMs ?? ATTEMPT_TIMEOUT_MS),
      responseBody: null,
      retryAfterMs: null,
    });
  }
}
