import type { Readable } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import type { ProviderHttpOptions } from './http-deps.ts';
import { ProviderError } from './provider-error.ts';

/** The defaults of ProviderHttpOptions (http-deps.ts) that every adapter's client applies. */
export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_MEDIA_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_MEDIA_BYTES = 100 * 1024 * 1024;

/**
 * The body as an iterable whose first chunk waits for `beforeWrite`. undici pulls a body only once
 * the request has a connected socket (name resolved, TCP and TLS done), and writes the request line
 * and headers together with the first chunk (or at the end, for no body): so `beforeWrite` runs
 * after everything that can fail without the provider hearing of the request, and before its first
 * byte leaves. A rejection (or the call's time limit) aborts the request with nothing written.
 */
export async function* gatedBody(payload: Buffer | undefined, beforeWrite: () => Promise<void>, signal: AbortSignal) {
  await beforeWrite();
  signal.throwIfAborted();
  if (payload !== undefined) yield payload;
}

/** One API call of an adapter, as it goes out. */
export interface ProviderCall {
  method: 'GET' | 'POST' | 'PATCH';
  headers: Record<string, string>;
  payload?: Buffer;
  /** Runs once the connection is open, before anything of the request is written (gatedBody). */
  beforeWrite?: () => Promise<void>;
}

/**
 * An API call through the core's dispatcher within the API time limit: every adapter's calls go out
 * this one way, so the write gate, the limits and the address policy hold for each. The answer's
 * status and text; what they mean is the adapter's (jsonAnswer, or its vendor's envelope).
 */
export async function callProvider(
  url: string,
  options: ProviderHttpOptions,
  { method, headers, payload, beforeWrite }: ProviderCall,
): Promise<{ status: number; text: string }> {
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeout);
  const response = await request(url, {
    method,
    dispatcher: options.dispatcher,
    headers: payload === undefined ? headers : { ...headers, 'content-length': `${payload.length}` },
    // undici takes an async iterable as a body (documented; its request() types name only streams).
    body: beforeWrite ? (gatedBody(payload, beforeWrite, signal) as unknown as Readable) : payload,
    signal,
    headersTimeout: timeout,
    bodyTimeout: timeout,
  });
  return { status: response.statusCode, text: await response.body.text() };
}

/**
 * The JSON of a successful answer; `refused` turns any other status into the vendor's error, and a
 * success without JSON is `invalid_response` (final).
 */
export function jsonAnswer(
  { status, text }: { status: number; text: string },
  vendor: string,
  refused: (status: number, body: unknown) => Error,
): unknown {
  const parsed = jsonOrUndefined(text);
  if (status < 200 || status >= 300) throw refused(status, parsed ?? text);
  if (parsed === undefined)
    throw new ProviderError('invalid_response', `${vendor} answered HTTP ${status} without JSON`, false, status, text);
  return parsed;
}

/** A provider's answer as JSON, or undefined when it is empty or not JSON (the caller reports the text). */
export function jsonOrUndefined(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A GET of a file through the core's dispatcher, within the media time limit. */
function getFile(url: string, options: ProviderHttpOptions) {
  const timeout = options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS;
  return request(url, {
    method: 'GET',
    dispatcher: options.dispatcher,
    signal: AbortSignal.timeout(timeout),
    headersTimeout: timeout,
    bodyTimeout: timeout,
  });
}

/**
 * A file a send names by URL (the business's), downloaded through the core's dispatcher within the
 * media limits, for a provider that takes the bytes rather than the URL. A refusal by that URL is
 * `media_unavailable`, retried when the server may answer later (429, 5xx).
 */
export async function downloadSentFile(
  url: string,
  options: ProviderHttpOptions,
): Promise<{ bytes: Buffer; contentType: string | null }> {
  const response = await getFile(url, options);
  if (response.statusCode < 200 || response.statusCode >= 300) {
    await response.body.dump();
    throw new ProviderError(
      'media_unavailable',
      `the media URL answered HTTP ${response.statusCode}`,
      response.statusCode >= 500 || response.statusCode === 429,
      response.statusCode,
    );
  }
  return boundedMedia(response, options.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES);
}

/**
 * Downloads a signed file URL a vendor gave (no credential goes with it: the signature is the
 * permission), within the media time limit and cut at the media limit; a non-2xx answer is the error
 * `refused` makes of its status and body.
 */
export async function downloadSigned(
  url: string,
  options: ProviderHttpOptions,
  refused: (status: number, text: string) => ProviderError,
): Promise<{ bytes: Buffer; contentType: string | null }> {
  const response = await getFile(url, options);
  if (response.statusCode < 200 || response.statusCode >= 300)
    throw refused(response.statusCode, await response.body.text());
  return boundedMedia(response, options.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES);
}

/** A media download's body, refused with `media_too_large` as soon as it passes `limit` bytes. */
export async function boundedMedia(
  response: Dispatcher.ResponseData,
  limit: number,
): Promise<{ bytes: Buffer; contentType: string | null }> {
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
