import { FormData, request } from 'undici';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { ProviderError } from '../provider-error.ts';
import { downloadSigned, callProvider, DEFAULT_MEDIA_TIMEOUT_MS, jsonOrUndefined } from '../provider-http.ts';
import { tiktokError } from './tiktok.errors.ts';

/** The Business API's version the adapter speaks. */
export const API_PATH = '/open_api/v1.3';

/** A call's options: the access token it carries (none for the token renewal), and the write gate of a send. */
interface CallOptions {
  accessToken?: string;
  beforeWrite?: () => Promise<void>;
}

/**
 * A thin client of TikTok's Business API: JSON calls answered in TikTok's envelope (`code` 0 and
 * `data`, else a ProviderError), a multipart upload, and downloads, all through the core's dispatcher.
 */
export class TikTokClient {
  constructor(
    private readonly baseUrl: string,
    private readonly options: ProviderHttpOptions = {},
  ) {}

  /**
   * POST `body` as JSON to `{baseUrl}/open_api/v1.3{path}` and return the envelope's `data`. With
   * `beforeWrite`, nothing of the request is written until it resolves (see gatedBody).
   */
  async post(path: string, body: unknown, { accessToken, beforeWrite }: CallOptions = {}): Promise<unknown> {
    const { status, text } = await callProvider(`${this.baseUrl}${API_PATH}${path}`, this.options, {
      method: 'POST',
      headers: {
        ...(accessToken === undefined ? {} : { 'access-token': accessToken }),
        accept: 'application/json',
        'content-type': 'application/json',
      },
      payload: Buffer.from(JSON.stringify(body)),
      beforeWrite,
    });
    return envelopeData(status, text);
  }

  /** POST a multipart form (a media upload) to `{baseUrl}/open_api/v1.3{path}`; the envelope's `data`. */
  async upload(path: string, form: FormData, accessToken: string): Promise<unknown> {
    const timeout = this.options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS;
    const response = await request(`${this.baseUrl}${API_PATH}${path}`, {
      method: 'POST',
      dispatcher: this.options.dispatcher,
      headers: { 'access-token': accessToken, accept: 'application/json' },
      body: form,
      signal: AbortSignal.timeout(timeout),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    return envelopeData(response.statusCode, await response.body.text());
  }

  /** Download an absolute URL (no token: the URLs are signed, or a client's), refusing bodies over the limit. */
  bytes(url: string): Promise<{ bytes: Buffer; contentType: string | null }> {
    return downloadSigned(
      url,
      this.options,
      (status, text) =>
        new ProviderError(
          `http_${status}`,
          `the media download answered HTTP ${status}`,
          status >= 500 || status === 429,
          status,
          text,
        ),
    );
  }
}

/** The `data` of a successful envelope (HTTP 2xx, `code` 0); a ProviderError otherwise. */
function envelopeData(status: number, text: string): unknown {
  const parsed = jsonOrUndefined(text);
  const code = (parsed as { code?: unknown } | undefined)?.code;
  if (status < 200 || status >= 300 || code !== 0) {
    if (parsed === undefined && status >= 200 && status < 300)
      throw new ProviderError('invalid_response', `TikTok answered HTTP ${status} without JSON`, false, status, text);
    throw tiktokError(status, parsed ?? text);
  }
  return (parsed as { data?: unknown }).data;
}
