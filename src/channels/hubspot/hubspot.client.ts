import type { ErrorClassification } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { ProviderError } from '../provider-error.ts';
import { FormData, request } from 'undici';
import {
  downloadSigned,
  callProvider,
  DEFAULT_MAX_MEDIA_BYTES,
  DEFAULT_MEDIA_TIMEOUT_MS,
  jsonOrUndefined,
} from '../provider-http.ts';

/**
 * A thin HubSpot API client: Bearer token, JSON bodies, multipart uploads and downloads of signed
 * file URLs, all through the core's dispatcher; HubSpot's errors as ProviderErrors.
 */
export class HubSpotClient {
  constructor(
    private readonly baseUrl: string,
    private readonly accessToken: string,
    private readonly options: ProviderHttpOptions = {},
  ) {}

  /** GET, or POST (or PATCH) JSON, to `{baseUrl}{path}` and return the parsed answer. */
  async call(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<unknown> {
    const { status, text } = await callProvider(`${this.baseUrl}${path}`, this.options, {
      method,
      headers: {
        authorization: `Bearer ${this.accessToken}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: Buffer.from(JSON.stringify(body)) }),
    });
    const parsed = jsonOrUndefined(text);
    if (status < 200 || status >= 300) throw hubSpotError(status, parsed ?? text);
    return parsed;
  }

  /** POST a multipart form (a file upload) to `{baseUrl}{path}`, within the media time limit; the parsed answer. */
  async upload(path: string, form: FormData): Promise<unknown> {
    const timeout = this.options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS;
    const response = await request(`${this.baseUrl}${path}`, {
      method: 'POST',
      dispatcher: this.options.dispatcher,
      headers: { authorization: `Bearer ${this.accessToken}`, accept: 'application/json' },
      body: form,
      signal: AbortSignal.timeout(timeout),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await response.body.text();
    const parsed = jsonOrUndefined(text);
    if (response.statusCode < 200 || response.statusCode >= 300)
      throw hubSpotError(response.statusCode, parsed ?? text);
    return parsed;
  }

  /**
   * Downloads a file's signed URL (HubSpot's answer; the signature is the permission, so no token
   * goes with it), refusing a body over the media limit.
   */
  download(url: string): Promise<{ bytes: Buffer; contentType: string | null }> {
    return downloadSigned(url, this.options, (status, text) => hubSpotError(status, jsonOrUndefined(text) ?? text));
  }

  /** The largest file uploaded or downloaded (the core's media limit). */
  get maxMediaBytes(): number {
    return this.options.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES;
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
