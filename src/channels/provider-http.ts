import type { Dispatcher } from 'undici';
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

/** A provider's answer as JSON, or undefined when it is empty or not JSON (the caller reports the text). */
export function jsonOrUndefined(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
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
