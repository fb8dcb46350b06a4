import type { ErrorClassification, FetchedMedia, IncomingHeaders, SendResult } from '../channel.types.ts';
import type { WebhookNotification } from '../channel-kind.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { DEFAULT_TWILIO_API_BASE_URL } from '../twilio-common/twilio.account.ts';
import { TwilioClient } from '../twilio-common/twilio.client.ts';
import { classifyTwilioError } from '../twilio-common/twilio.errors.ts';
import { param, parseForm } from '../twilio-common/twilio.form.ts';
import { verifyTwilioSignature } from '../twilio-common/twilio.signature.ts';
import type { TwilioVoiceConfig } from './twilio-voice.config.ts';
import { CALLBACK_EVENTS, EVENT_PARAM, NUMBER_PARAM } from './twilio-voice.notifications.ts';
import { HANGUP_TWIML, incomingCallTwiml, type CallbackUrls } from './twilio-voice.twiml.ts';

/** The path Twilio posts calls and their callbacks to (registry.ts's webhookPath of this kind). */
export const TWILIO_VOICE_WEBHOOK_PATH = '/channels/twilio_voice/webhook';

/** Twilio Voice behind the channel provider interface: calls come in; nothing is sent. */
export class TwilioVoiceProvider implements ChannelProvider {
  readonly kind = 'twilio_voice';
  private readonly client: TwilioClient;
  private readonly baseUrl: string;

  constructor(
    private readonly config: TwilioVoiceConfig,
    private readonly http: ProviderHttpOptions = {},
  ) {
    this.baseUrl = (config.api_base_url ?? DEFAULT_TWILIO_API_BASE_URL).replace(/\/+$/, '');
    this.client = new TwilioClient(this.baseUrl, config.account_sid, config.auth_token, http);
  }

  private get accountPath(): string {
    return `/2010-04-01/Accounts/${encodeURIComponent(this.config.account_sid)}`;
  }

  /** The core refuses sends on a receive-only kind before they are queued; one that gets here is final. */
  send(): Promise<SendResult> {
    return Promise.reject(new ProviderError('channel_receive_only', 'a voice channel sends nothing', false));
  }

  /** As for SMS: Twilio signs the URL it called (query included) and the form parameters, for this account. */
  verifySignature(rawBody: Buffer, headers: IncomingHeaders, path?: string): boolean {
    if (!path || !this.http.publicUrl) return false;
    const params = parseForm(rawBody);
    if (param(params, 'AccountSid') !== this.config.account_sid) return false;
    return verifyTwilioSignature(this.config.auth_token, `${this.http.publicUrl}${path}`, params, headers);
  }

  /**
   * An incoming call is answered with its instructions (the greeting, then a recording or the
   * forward); the end of a recording or of a forwarded call with a hang-up; anything else with the
   * kind's empty TwiML.
   */
  answerNotification(read: WebhookNotification, query: Record<string, string>): string | undefined {
    if (read.notification.messages.length > 0) return incomingCallTwiml(this.config, this.callbackUrls());
    const event = query[EVENT_PARAM];
    if (event === CALLBACK_EVENTS.recorded || event === CALLBACK_EVENTS.dialed) return HANGUP_TWIML;
    return undefined;
  }

  classifyError(err: unknown): ErrorClassification {
    return classifyTwilioError(err);
  }

  /** A call's recording by its RecordingUrl, which must be the account's on the channel's Twilio API; as MP3. */
  async fetchMedia(recordingUrl: string): Promise<FetchedMedia> {
    if (!recordingUrl.startsWith(`${this.baseUrl}${this.accountPath}/Recordings/`)) {
      throw new ProviderError('invalid_media_url', "the recording URL is not on the channel's Twilio account", false);
    }
    // Without an extension Twilio answers WAV; the MP3 is a tenth of its size.
    const url = /\.(mp3|wav)$/.test(recordingUrl) ? recordingUrl : `${recordingUrl}.mp3`;
    const { bytes, contentType } = await this.client.bytes(url);
    return { bytes, mimeType: contentType ?? 'audio/mpeg', fileSize: bytes.length };
  }

  /** The webhook's callback URLs for this channel: Twilio signs them, query included, as it calls them. */
  private callbackUrls(): CallbackUrls {
    const base = `${this.http.publicUrl ?? ''}${TWILIO_VOICE_WEBHOOK_PATH}`;
    const number = encodeURIComponent(this.config.phone_number);
    const url = (event: string) => `${base}?${EVENT_PARAM}=${event}&${NUMBER_PARAM}=${number}`;
    return {
      recorded: url(CALLBACK_EVENTS.recorded),
      dialed: url(CALLBACK_EVENTS.dialed),
      recording: url(CALLBACK_EVENTS.recording),
    };
  }
}
