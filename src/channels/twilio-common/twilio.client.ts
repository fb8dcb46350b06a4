import type { Readable } from 'node:stream';
import { request } from 'undici';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { ProviderError } from '../provider-error.ts';
import {
  boundedMedia,
  DEFAULT_MAX_MEDIA_BYTES,
  DEFAULT_MEDIA_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  gatedBody,
  jsonOrUndefined,
} from '../provider-http.ts';
import { twilioError } from './twilio.errors.ts';

/** A thin Twilio REST client: basic auth (account SID and auth token), form bodies, Twilio errors as ProviderErrors. */
export class TwilioClient {
  private readonly authorization: string;

  constructor(
    private readonly baseUrl: string,
    accountSid: string,
    authToken: string,
    private readonly options: ProviderHttpOptions = {},
  ) {
    this.authorization = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  }

  /**
   * POST a form to `{baseUrl}{path}` and return the parsed JSON answer. With `beforeWrite`, nothing
   * of the request is written until it resolves, and nothing at all if it rejects: undici pulls the
   * body only once the connection is open, and writes the headers with its first chunk.
   */
  async postForm(path: string, form: URLSearchParams, beforeWrite?: () => Promise<void>): Promise<unknown> {
    const timeout = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeout);
    const payload = Buffer.from(form.toString());
    const response = await request(`${this.baseUrl}${path}`, {
      method: 'POST',
      dispatcher: this.options.dispatcher,
      headers: {
        authorization: this.authorization,
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': `${payload.length}`,
      },
      // undici takes an async iterable as a body (documented; its request() types name only streams).
      body: beforeWrite ? (gatedBody(payload, beforeWrite, signal) as unknown as Readable) : payload,
      signal,
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await response.body.text();
    const parsed = jsonOrUndefined(text);
    if (response.statusCode < 200 || response.statusCode >= 300) throw twilioError(response.statusCode, parsed ?? text);
    if (parsed === undefined) {
      throw new ProviderError(
        'invalid_response',
        `Twilio answered HTTP ${response.statusCode} without JSON`,
        false,
        response.statusCode,
        text,
      );
    }
    return parsed;
  }

  /** Download a media URL with the account's credentials, following Twilio's redirect to its storage once. */
  async bytes(url: string): Promise<{ bytes: Buffer; contentType: string | null }> {
    const timeout = this.options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS;
    const limit = this.options.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES;
    const get = (target: string, withAuth: boolean) =>
      request(target, {
        method: 'GET',
        dispatcher: this.options.dispatcher,
        headers: withAuth ? { authorization: this.authorization } : {},
        signal: AbortSignal.timeout(timeout),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
    let response = await get(url, true);
    const location = response.headers.location;
    if (response.statusCode >= 300 && response.statusCode < 400 && typeof location === 'string') {
      await response.body.dump();
      // The redirect is a pre-signed storage address: the credentials stay with Twilio's own host.
      response = await get(new URL(location, url).toString(), false);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const text = await response.body.text();
      throw twilioError(response.statusCode, jsonOrUndefined(text) ?? text);
    }
    return boundedMedia(response, limit);
  }
}
