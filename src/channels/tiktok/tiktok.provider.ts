import { FormData } from 'undici';
import type {
  ErrorClassification,
  FetchedMedia,
  IncomingHeaders,
  OutboundContent,
  SendRequest,
  SendResult,
} from '../channel.types.ts';
import type { CredentialStore } from '../credential-store.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { TikTokClient } from './tiktok.client.ts';
import { DEFAULT_TIKTOK_API_BASE_URL, type TikTokConfig } from './tiktok.config.ts';
import { classifyTikTokError, TOKEN_EXPIRED_CODE } from './tiktok.errors.ts';
import { readMediaRef } from './tiktok.notifications.ts';
import { verifyTikTokSignature } from './tiktok.signature.ts';
import { TikTokTokens } from './tiktok.tokens.ts';

/** The Business Messaging endpoints (under /open_api/v1.3). */
const SEND_PATH = '/business/message/send/';
const UPLOAD_PATH = '/business/message/media/upload/';
const DOWNLOAD_PATH = '/business/message/media/download/';

type Json = Record<string, unknown>;
const object = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

/**
 * TikTok Business Messaging behind the channel provider interface: sends to a conversation (a text,
 * or an image uploaded first), images of inbound messages by their download URL, the webhook's
 * Tiktok-Signature, and the OAuth tokens every call carries, renewed when they expire.
 */
export class TikTokProvider implements ChannelProvider {
  readonly kind = 'tiktok';
  private readonly client: TikTokClient;
  private readonly tokens: TikTokTokens;

  constructor(
    private readonly config: TikTokConfig,
    http: ProviderHttpOptions = {},
    credentials?: CredentialStore,
  ) {
    this.client = new TikTokClient((config.api_base_url ?? DEFAULT_TIKTOK_API_BASE_URL).replace(/\/+$/, ''), http);
    this.tokens = new TikTokTokens(config, this.client, credentials);
  }

  async send(request: SendRequest): Promise<SendResult> {
    const accessToken = await this.tokens.accessToken();
    const body: Json = {
      business_id: this.config.business_id,
      recipient_type: 'CONVERSATION',
      recipient: request.to,
      ...(await this.payload(request.content, accessToken)),
      ...(request.replyToProviderMessageId
        ? { referenced_message_info: { referenced_message_id: request.replyToProviderMessageId } }
        : {}),
    };
    const data = await this.call(accessToken, () =>
      this.client.post(SEND_PATH, body, { accessToken, beforeWrite: request.beforeSend }),
    );
    const id = str(object(object(data).message).message_id);
    // TikTok accepted the call but named no message: retrying could send it twice, so it is final.
    if (!id)
      throw new ProviderError('invalid_response', 'TikTok accepted the send without a message id', false, 200, data);
    return { providerMessageId: id };
  }

  /** A text, or an image by TikTok's media id (uploaded from the URL first); TikTok sends no caption with it. */
  private async payload(content: OutboundContent, accessToken: string): Promise<Json> {
    if (content.kind === 'text') return { message_type: 'TEXT', text: { body: content.text } };
    if (content.kind === 'media' && content.mediaKind === 'image') {
      const mediaId = await this.upload(content.url, accessToken);
      return { message_type: 'IMAGE', image: { media_id: mediaId } };
    }
    throw new ProviderError('unsupported_content', `TikTok sends texts and images, not ${content.kind}`, false);
  }

  /** The image at `url`, uploaded to TikTok: its media id. */
  private async upload(url: string, accessToken: string): Promise<string> {
    const { bytes, contentType } = await this.client.bytes(url);
    const type = contentType?.split(';')[0].trim() || 'image/jpeg';
    const form = new FormData();
    form.append('business_id', this.config.business_id);
    form.append('media_type', 'IMAGE');
    form.append('file', new Blob([new Uint8Array(bytes)], { type }), `image.${type.split('/')[1] ?? 'jpg'}`);
    const data = await this.call(accessToken, () => this.client.upload(UPLOAD_PATH, form, accessToken));
    const mediaId = str(object(data).media_id);
    if (!mediaId) throw new ProviderError('invalid_response', 'the media upload answered no media_id', true, 200, data);
    return mediaId;
  }

  /** An inbound image: its download URL asked of TikTok, then its bytes. */
  async fetchMedia(ref: string): Promise<FetchedMedia> {
    const parts = readMediaRef(ref);
    if (!parts) throw new ProviderError('invalid_media_id', 'not a TikTok media reference', false);
    const accessToken = await this.tokens.accessToken();
    const data = await this.call(accessToken, () =>
      this.client.post(
        DOWNLOAD_PATH,
        {
          business_id: this.config.business_id,
          conversation_id: parts.conversationId,
          message_id: parts.messageId,
          media_id: parts.mediaId,
          media_type: 'IMAGE',
        },
        { accessToken },
      ),
    );
    const url = str(object(data).download_url);
    if (!url || !/^https?:\/\//.test(url))
      throw new ProviderError('invalid_response', 'the media download answered no URL', false, 200, data);
    const { bytes, contentType } = await this.client.bytes(url);
    return { bytes, mimeType: contentType ?? 'application/octet-stream', fileSize: bytes.length };
  }

  verifySignature(rawBody: Buffer, headers: IncomingHeaders): boolean {
    return verifyTikTokSignature(rawBody, headers, this.config.app_secret);
  }

  classifyError(err: unknown): ErrorClassification {
    return classifyTikTokError(err);
  }

  /** A call with the token; TikTok saying it expired makes the next call renew it (this one is retried). */
  private async call<T>(accessToken: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof ProviderError && err.code === String(TOKEN_EXPIRED_CODE)) this.tokens.expired(accessToken);
      throw err;
    }
  }
}
