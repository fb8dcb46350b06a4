import { request } from 'undici';
import type { ProviderHttpOptions } from '../http-deps.ts';
import {
  boundedMedia,
  callProvider,
  DEFAULT_MAX_MEDIA_BYTES,
  DEFAULT_MEDIA_TIMEOUT_MS,
  jsonAnswer,
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
    const answer = await callProvider(`${this.baseUrl}${path}`, this.options, {
      method: 'POST',
      headers: {
        authorization: this.authorization,
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: Buffer.from(form.toString()),
      beforeWrite,
    });
    return jsonAnswer(answer, 'Twilio', twilioError);
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
