import type { FetchedMedia, FetchedProfile, SendRequest, SendResult } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { MetaAppProvider, type MetaAppConfig } from './meta-app.provider.ts';
import { object, str } from './meta.read.ts';
import { buildMetaSendBody, type SendOptions } from './messaging.payloads.ts';

/** What tells Messenger and Instagram apart behind one adapter. */
export interface MetaMessagingProduct extends SendOptions {
  kind: string;
  /** The profile fields of `GET /{id}`: Messenger's first and last names, Instagram's name and username; pictures. */
  profile: (answer: Record<string, unknown>) => FetchedProfile | null;
  profileFields: string;
}

/**
 * Meta's Messenger Platform (Messenger, Instagram messaging) behind the channel provider interface:
 * the Send API on the account's `/messages`, attachments and profile pictures by their signed URL, profiles by id.
 */
export class MetaMessagingProvider extends MetaAppProvider implements ChannelProvider {
  readonly kind: string;

  constructor(
    config: MetaAppConfig,
    /** The page id (Messenger) or Instagram account id. */
    private readonly account: string,
    private readonly product: MetaMessagingProduct,
    http: ProviderHttpOptions = {},
  ) {
    super(config, http);
    this.kind = product.kind;
  }

  async send(request: SendRequest): Promise<SendResult> {
    const path = `/${encodeURIComponent(this.account)}/messages`;
    const body = buildMetaSendBody(request, this.product);
    const answer = object(await this.graph.json('POST', path, body, request.beforeSend));
    const id = str(answer?.message_id);
    // Meta accepted the call but named no message: retrying could send it twice, so it is final.
    if (!id)
      throw new ProviderError(
        'invalid_response',
        'the Send API accepted the send without a message id',
        false,
        200,
        answer,
      );
    const recipient = str(answer?.recipient_id);
    return { providerMessageId: id, ...(recipient ? { recipientId: recipient } : {}) };
  }

  /** An attachment by its URL, which Meta signs itself: fetched without the channel's token. */
  async fetchMedia(url: string): Promise<FetchedMedia> {
    if (!/^https?:\/\//.test(url)) throw new ProviderError('invalid_media_url', 'the attachment has no URL', false);
    const { bytes, contentType } = await this.graph.bytes(url, { bearer: false });
    return { bytes, mimeType: contentType ?? 'application/octet-stream', fileSize: bytes.length };
  }

  /** A profile picture by its URL, signed by Meta like attachments': fetched without the token, bounded. */
  async fetchAvatar(url: string, { maxBytes }: { maxBytes: number }): Promise<FetchedMedia> {
    if (!/^https?:\/\//.test(url))
      throw new ProviderError('invalid_media_url', 'the profile picture has no URL', false);
    const { bytes, contentType } = await this.graph.bytes(url, { bearer: false, maxBytes, small: true });
    return { bytes, mimeType: contentType ?? 'application/octet-stream', fileSize: bytes.length };
  }

  async fetchProfile(address: string): Promise<FetchedProfile | null> {
    const path = `/${encodeURIComponent(address)}?fields=${this.product.profileFields}`;
    const answer = object(await this.graph.json('GET', path));
    return answer ? this.product.profile(answer) : null;
  }
}
