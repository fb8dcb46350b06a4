import type { ErrorClassification, FetchedMedia, IncomingHeaders, SendRequest, SendResult } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { TwilioClient } from '../twilio-common/twilio.client.ts';
import { DEFAULT_TWILIO_API_BASE_URL, type TwilioConfig } from './twilio.config.ts';
import { classifyTwilioError } from '../twilio-common/twilio.errors.ts';
import { param, parseForm } from '../twilio-common/twilio.form.ts';
import { REFERENCE_PARAM } from './twilio.notifications.ts';
import { verifyTwilioSignature } from '../twilio-common/twilio.signature.ts';

/** The path Twilio posts messages and status callbacks to (registry.ts's webhookPath of this kind). */
export const TWILIO_WEBHOOK_PATH = '/channels/twilio/webhook';

/** Twilio's Messaging API (SMS and MMS) behind the channel provider interface. */
export class TwilioProvider implements ChannelProvider {
  readonly kind = 'twilio';
  private readonly client: TwilioClient;
  private readonly baseUrl: string;

  constructor(
    private readonly config: TwilioConfig,
    private readonly http: ProviderHttpOptions = {},
  ) {
    this.baseUrl = (config.api_base_url ?? DEFAULT_TWILIO_API_BASE_URL).replace(/\/+$/, '');
    this.client = new TwilioClient(this.baseUrl, config.account_sid, config.auth_token, http);
  }

  private get accountPath(): string {
    return `/2010-04-01/Accounts/${encodeURIComponent(this.config.account_sid)}`;
  }

  async send(request: SendRequest): Promise<SendResult> {
    const form = new URLSearchParams({ To: request.to.startsWith('+') ? request.to : `+${request.to}` });
    if (this.config.messaging_service_sid) form.set('MessagingServiceSid', this.config.messaging_service_sid);
    else form.set('From', this.config.from_number);
    const { content } = request;
    if (content.kind === 'text') form.set('Body', content.text);
    else if (content.kind === 'media') {
      form.set('MediaUrl', content.url);
      if (content.caption) form.set('Body', content.caption);
    } else throw new ProviderError('unsupported_content', 'SMS has no templates', false);
    if (this.http.publicUrl) {
      const reference = request.reference ? `?${REFERENCE_PARAM}=${encodeURIComponent(request.reference)}` : '';
      form.set('StatusCallback', `${this.http.publicUrl}${TWILIO_WEBHOOK_PATH}${reference}`);
    }
    const answer = await this.client.postForm(`${this.accountPath}/Messages.json`, form, request.beforeSend);
    const fields = typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>) : {};
    // Twilio accepted the call but named no message: retrying could send it twice, so it is final.
    if (typeof fields.sid !== 'string' || fields.sid === '')
      throw new ProviderError('invalid_response', 'Twilio accepted the send without a message sid', false, 200, answer);
    return {
      providerMessageId: fields.sid,
      ...(typeof fields.status === 'string' ? { providerStatus: fields.status } : {}),
    };
  }

  /**
   * Twilio signs the URL it called (the service's public address and `path`, query included) and
   * the form parameters; the notification must also name this channel's account.
   */
  verifySignature(rawBody: Buffer, headers: IncomingHeaders, path?: string): boolean {
    if (!path || !this.http.publicUrl) return false;
    const params = parseForm(rawBody);
    if (param(params, 'AccountSid') !== this.config.account_sid) return false;
    return verifyTwilioSignature(this.config.auth_token, `${this.http.publicUrl}${path}`, params, headers);
  }

  classifyError(err: unknown): ErrorClassification {
    return classifyTwilioError(err);
  }

  /** An MMS attachment by its media URL, which must be the account's on the channel's Twilio API. */
  async fetchMedia(mediaUrl: string): Promise<FetchedMedia> {
    if (!mediaUrl.startsWith(`${this.baseUrl}${this.accountPath}/`)) {
      throw new ProviderError('invalid_media_url', "the media URL is not on the channel's Twilio account", false);
    }
    const { bytes, contentType } = await this.client.bytes(mediaUrl);
    return { bytes, mimeType: contentType ?? 'application/octet-stream', fileSize: bytes.length };
  }
}
