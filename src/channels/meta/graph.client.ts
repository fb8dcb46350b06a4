import { request } from 'undici';
import type { ProviderHttpOptions } from '../http-deps.ts';
import {
  boundedMedia,
  callProvider,
  DEFAULT_MAX_MEDIA_BYTES,
  DEFAULT_MEDIA_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  jsonAnswer,
  jsonOrUndefined,
} from '../provider-http.ts';
import { graphError } from './graph.errors.ts';

/** A thin Graph API client (every Meta product's): bearer auth, timeouts, Graph errors turned into ProviderErrors. */
export class GraphClient {
  constructor(
    private readonly baseUrl: string,
    private readonly accessToken: string,
    private readonly options: ProviderHttpOptions = {},
  ) {}

  /**
   * Call `{baseUrl}{path}` and return the parsed JSON answer. With `beforeWrite`, nothing of the
   * request is written until it resolves, and nothing at all if it rejects (see gatedBody).
   */
  async json(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    beforeWrite?: () => Promise<void>,
  ): Promise<unknown> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const answer = await callProvider(`${this.baseUrl}${path}`, this.options, {
      method,
      headers: {
        authorization: `Bearer ${this.accessToken}`,
        accept: 'application/json',
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      },
      payload,
      beforeWrite,
    });
    return jsonAnswer(answer, 'Graph API', graphError);
  }

  /**
   * Download an absolute URL, refusing bodies over the size limit: with the same bearer token, or
   * without it (`bearer: false`) for a URL that is signed itself (Messenger's attachment URLs on
   * Meta's CDN), so the token never goes to a host a notification named. `maxBytes` lowers the
   * size limit; `small` gives the call an API call's time limit instead of a media download's.
   */
  async bytes(
    url: string,
    { bearer = true, maxBytes, small = false }: { bearer?: boolean; maxBytes?: number; small?: boolean } = {},
  ): Promise<{ bytes: Buffer; contentType: string | null }> {
    // A small file (a profile picture) gets an API call's time, not an attachment's.
    const timeout = small
      ? (this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
      : (this.options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS);
    const limit = Math.min(maxBytes ?? Infinity, this.options.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES);
    const response = await request(url, {
      method: 'GET',
      dispatcher: this.options.dispatcher,
      headers: bearer ? { authorization: `Bearer ${this.accessToken}` } : {},
      signal: AbortSignal.timeout(timeout),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const text = await response.body.text();
      throw graphError(response.statusCode, jsonOrUndefined(text) ?? text);
    }
    return boundedMedia(response, limit);
  }
}
