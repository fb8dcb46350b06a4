import type { FetchedMedia, SendRequest, SendResult } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import type { WhatsAppCloudConfig } from './whatsapp-cloud.config.ts';
import { MetaAppProvider } from '../meta/meta-app.provider.ts';
import { buildSendBody } from './whatsapp-cloud.payloads.ts';
import { object, str } from '../meta/meta.read.ts';

/** Meta's WhatsApp Cloud API (Graph API) behind the channel provider interface. */
export class WhatsAppCloudProvider extends MetaAppProvider implements ChannelProvider {
  readonly kind = 'whatsapp_cloud';

  constructor(
    private readonly config: WhatsAppCloudConfig,
    http: ProviderHttpOptions = {},
  ) {
    super(config, http);
  }

  async send(request: SendRequest): Promise<SendResult> {
    const path = `/${encodeURIComponent(this.config.phone_number_id)}/messages`;
    const answer = object(await this.graph.json('POST', path, buildSendBody(request), request.beforeSend));
    const message = object(Array.isArray(answer?.messages) ? answer.messages[0] : null);
    const id = str(message?.id);
    // Meta accepted the call but named no message: retrying could send it twice, so it is final.
    if (!id)
      throw new ProviderError(
        'invalid_response',
        'Graph API accepted the send without a message id',
        false,
        200,
        answer,
      );
    const contact = object(Array.isArray(answer?.contacts) ? answer.contacts[0] : null);
    const result: SendResult = { providerMessageId: id };
    const waId = str(contact?.wa_id);
    const status = str(message?.message_status);
    if (waId) result.recipientId = waId;
    if (status) result.providerStatus = status;
    return result;
  }

  async fetchMedia(mediaId: string): Promise<FetchedMedia> {
    const info = object(await this.graph.json('GET', `/${encodeURIComponent(mediaId)}`));
    const url = str(info?.url);
    if (!info || !url || !/^https?:\/\//.test(url)) {
      throw new ProviderError(
        'invalid_response',
        `Graph API gave no download URL for media ${mediaId}`,
        false,
        200,
        info,
      );
    }
    const { bytes, contentType } = await this.graph.bytes(url);
    const fileSize = Number(info.file_size);
    const sha256 = str(info.sha256);
    return {
      bytes,
      mimeType: str(info.mime_type) ?? contentType ?? 'application/octet-stream',
      ...(sha256 ? { sha256 } : {}),
      ...(Number.isFinite(fileSize) && info.file_size !== undefined ? { fileSize } : {}),
    };
  }
}
