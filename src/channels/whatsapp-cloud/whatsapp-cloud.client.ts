import type { Readable } from 'node:stream';
import { request } from 'undici';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { ProviderError } from '../provider-error.ts';
import { graphError } from './whatsapp-cloud.errors.ts';

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MEDIA_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_MEDIA_BYTES = 100 * 1024 * 1024;

/** A thin Graph API client: bearer auth, timeouts, Graph errors turned into ProviderErrors. */
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
    const timeout = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeout);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const response = await request(`${this.baseUrl}${path}`, {
      method,
      dispatcher: this.options.dispatcher,
      headers: {
        authorization: `Bearer ${this.accessToken}`,
        accept: 'application/json',
        ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': `${payload.length}` }),
      },
      // undici takes an async iterable as a body (documented; its request() types name only streams).
      body: beforeWrite ? (gatedBody(payload, beforeWrite, signal) as unknown as Readable) : payload,
      signal,
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await response.body.text();
    const parsed = parseJson(text);
    if (response.statusCode < 200 || response.statusCode >= 300) throw graphError(response.statusCode, parsed ?? text);
    if (parsed === undefined) {
      throw new ProviderError(
        'invalid_response',
        `Graph API answered HTTP ${response.statusCode} without JSON`,
        false,
        response.statusCode,
        text,
      );
    }
    return parsed;
  }

  /** Download an absolute URL with the same bearer token, refusing bodies over the size limit. */
  async bytes(url: string): Promise<{ bytes: Buffer; contentType: string | null }> {
    const timeout = this.options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS;
    const limit = this.options.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES;
    const response = await request(url, {
      method: 'GET',
      dispatcher: this.options.dispatcher,
      headers: { authorization: `Bearer ${this.accessToken}` },
      signal: AbortSignal.timeout(timeout),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const text = await response.body.text();
      throw graphError(response.statusCode, parseJson(text) ?? text);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        response.body.destroy();
        throw new ProviderError('media_too_large', `media is larger than ${limit} bytes`, false, response.statusCode);
      }
      chunks.push(chunk as Buffer);
    }
    const contentType = response.headers['content-type'];
    return { bytes: Buffer.concat(chunks, size), contentType: typeof contentType === 'string' ? contentType : null };
  }
}

/**
 * The body as an iterable whose first chunk waits for `beforeWrite`. undici pulls a body only once
 * the request has a connected socket (name resolved, TCP and TLS done), and writes the request line
 * and headers together with the first chunk (or at the end, for no body): so `beforeWrite` runs
 * after everything that can fail without the provider hearing of the request, and before its first
 * byte leaves. A rejection (or the call's time limit) aborts the request with nothing written.
 */
async function* gatedBody(payload: Buffer | undefined, beforeWrite: () => Promise<void>, signal: AbortSignal) {
  await beforeWrite();
  signal.throwIfAborted();
  if (payload !== undefined) yield payload;
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
