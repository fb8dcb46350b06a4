import type { ErrorClassification } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { ProviderError } from '../provider-error.ts';
import { callProvider, jsonOrUndefined } from '../provider-http.ts';

/** A thin HubSpot API client: Bearer token, JSON bodies, HubSpot's errors as ProviderErrors. */
export class HubSpotClient {
  constructor(
    private readonly baseUrl: string,
    private readonly accessToken: string,
    private readonly options: ProviderHttpOptions = {},
  ) {}

  /** POST (or PATCH) JSON to `{baseUrl}{path}` and return the parsed answer. */
  async call(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<unknown> {
    const { status, text } = await callProvider(`${this.baseUrl}${path}`, this.options, {
      method,
      headers: {
        authorization: `Bearer ${this.accessToken}`,
        accept: 'application/json',
        'content-type': 'application/json',
      },
      payload: Buffer.from(JSON.stringify(body)),
    });
    const parsed = jsonOrUndefined(text);
    if (status < 200 || status >= 300) throw hubSpotError(status, parsed ?? text);
    return parsed;
  }
}

/**
 * HubSpot's error answer (`{status: "error", message, category, correlationId}`): rate limits (429)
 * and its own failures (5xx) are retried; a refused token (401) is final and says so; the rest
 * (400: a body it refuses, 404: an unknown channel) is final.
 */
export function hubSpotError(status: number, body: unknown): ProviderError {
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const category = typeof record.category === 'string' ? record.category : `http_${status}`;
  const message = typeof record.message === 'string' ? record.message : `HubSpot answered HTTP ${status}`;
  return new ProviderError(category, message, status === 429 || status >= 500, status, body);
}

/** Whether a failed call may be tried again, with the detail to store. */
export function classifyHubSpotError(err: unknown): ErrorClassification {
  if (err instanceof ProviderError) {
    return {
      retryable: err.retryable,
      code: err.code,
      detail: err.message,
      ...(err.httpStatus === 401 ? { credentialsRejected: true } : {}),
    };
  }
  return (
    classifyNetworkError(err) ?? {
      retryable: false,
      code: 'internal',
      detail: err instanceof Error ? err.message : String(err),
    }
  );
}
