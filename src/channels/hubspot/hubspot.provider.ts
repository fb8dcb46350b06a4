import { FormData } from 'undici';
import type {
  ErrorClassification,
  FetchedMedia,
  IncomingHeaders,
  MirroredFile,
  MirroredMessage,
  SendRequest,
  SendResult,
} from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { classifyHubSpotError, HubSpotClient } from './hubspot.client.ts';
import { DEFAULT_HUBSPOT_API_BASE_URL, type HubSpotConfig } from './hubspot.config.ts';
import { verifyHubSpotSignature } from './hubspot.signature.ts';

/** How HubSpot names a person's address: its own kinds for phones and emails, an opaque id otherwise. */
function deliveryIdentifier(kind: string, value: string) {
  if (kind === 'phone') return { type: 'HS_PHONE_NUMBER', value: value.startsWith('+') ? value : `+${value}` };
  if (kind === 'email') return { type: 'HS_EMAIL_ADDRESS', value };
  return { type: 'CHANNEL_SPECIFIC_OPAQUE_ID', value };
}

/** How HubSpot's inbox shows a file of a custom channel's message (`fileUsageType`), by the message's type. */
const USAGE: Readonly<Record<string, string>> = {
  image: 'IMAGE',
  sticker: 'STICKER',
  audio: 'AUDIO',
  voice: 'VOICE_RECORDING',
};

/** A file id as HubSpot's Files API gives them. */
const FILE_ID = /^[0-9]{1,20}$/;

const object = (value: unknown) =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};

/** The name a mirrored file is uploaded under: the media id first, so two files never share one. */
function uploadName(file: MirroredFile): string {
  const given = file.filename?.replace(/[\\/\p{Cc}]/gu, '_').slice(-120);
  if (given) return `${file.id}-${given}`;
  const sub = /^[a-z]+\/([a-z0-9]+)/.exec(file.contentType)?.[1];
  return `${file.kind}-${file.id}${sub ? `.${sub === 'jpeg' ? 'jpg' : sub}` : ''}`;
}

/**
 * A HubSpot custom channel account: the business's customers' messages, from its other channels,
 * are published into the inbox the account is connected to (`mirror`), one HubSpot thread per
 * conversation; the replies written there come back by webhook and go out through the
 * conversation's own channel. Nothing is sent to a person through HubSpot itself.
 */
export class HubSpotProvider implements ChannelProvider {
  readonly kind = 'hubspot';
  private readonly client: HubSpotClient;

  constructor(
    private readonly config: HubSpotConfig,
    private readonly http: ProviderHttpOptions = {},
  ) {
    const base = (config.api_base_url ?? DEFAULT_HUBSPOT_API_BASE_URL).replace(/\/+$/, '');
    this.client = new HubSpotClient(base, config.access_token, http);
  }

  /** The channel's conversations are the other channels': a send through it has no one to reach. */
  send(_request: SendRequest): Promise<SendResult> {
    return Promise.reject(
      new ProviderError('unsupported', "HubSpot mirrors the business's other channels; it sends to no one", false),
    );
  }

  mirrors(channelType: string): boolean {
    const types = this.config.mirror_channel_types;
    return channelType !== 'hubspot_chat' && (types === undefined || (types as string[]).includes(channelType));
  }

  /**
   * Publishes the customer's message as INCOMING on the conversation's thread
   * (`integrationThreadId`: the conversation's id), keyed by the message's id
   * (`integrationIdempotencyId`): HubSpot keeps one message per key, so a retry never shows twice.
   * Its files are uploaded first (Files API) and attached by their ids; a file that could not be
   * fetched, or is over the media limit, is named in a note under the text instead.
   */
  async mirror(message: MirroredMessage): Promise<void> {
    const sender = deliveryIdentifier(message.sender.addressKind, message.sender.address);
    const attachments: { type: 'FILE'; fileId: string; fileUsageType: string }[] = [];
    const notes: string[] = [];
    for (const file of message.files ?? []) {
      const label = file.filename ?? `a ${file.kind} file`;
      if (!file.read) notes.push(`(${label} could not be fetched from the customer's channel)`);
      else if (file.size > this.client.maxMediaBytes)
        notes.push(`(${label} is not attached: larger than ${this.client.maxMediaBytes} bytes)`);
      else
        attachments.push({
          type: 'FILE',
          fileId: await this.upload(message.conversationId, file, await file.read()),
          fileUsageType: USAGE[file.kind] ?? 'OTHER',
        });
    }
    await this.client.call('POST', `/conversations/v3/custom-channels/${this.config.channel_id}/messages`, {
      type: 'MESSAGE',
      text: [message.text, ...notes].join('\n\n'),
      ...(attachments.length > 0 ? { attachments } : {}),
      messageDirection: 'INCOMING',
      integrationThreadId: message.conversationId,
      integrationIdempotencyId: message.id,
      channelAccountId: this.config.channel_account_id,
      senders: [{ ...(message.sender.name ? { name: message.sender.name } : {}), deliveryIdentifier: sender }],
      recipients: [{ deliveryIdentifier: { type: 'CHANNEL_SPECIFIC_OPAQUE_ID', value: message.to } }],
      timestamp: message.createdAt,
    });
  }

  /**
   * Uploads a mirrored file privately into the conversation's folder, named by its media id: a
   * retried job's upload gets the file uploaded before back (`RETURN_EXISTING` in that folder)
   * rather than a second copy. Answers HubSpot's file id.
   */
  private async upload(conversationId: string, file: MirroredFile, bytes: Buffer): Promise<string> {
    const form = new FormData();
    const name = uploadName(file);
    form.append('file', new Blob([new Uint8Array(bytes)], { type: file.contentType }), name);
    form.append('fileName', name);
    form.append('folderPath', `/customer-files/${conversationId}`);
    form.append(
      'options',
      JSON.stringify({
        access: 'PRIVATE',
        duplicateValidationStrategy: 'RETURN_EXISTING',
        duplicateValidationScope: 'EXACT_FOLDER',
      }),
    );
    const id = object(await this.client.upload('/files/v3/files', form)).id;
    if ((typeof id !== 'string' && typeof id !== 'number') || !FILE_ID.test(String(id)))
      throw new ProviderError('invalid_response', 'the file upload answered no file id', true);
    return String(id);
  }

  /** Reports a relayed reply's delivery on HubSpot's message: SENT, or FAILED with the error. */
  async reportRelayed(key: string, outcome: { sent: true } | { failed: string }): Promise<void> {
    const path = `/conversations/v3/custom-channels/${this.config.channel_id}/messages/${encodeURIComponent(key)}`;
    await this.client.call(
      'PATCH',
      path,
      'sent' in outcome ? { statusType: 'SENT' } : { statusType: 'FAILED', errorMessage: outcome.failed.slice(0, 500) },
    );
  }

  /** The webhook's v3 signature, of PUBLIC_URL and the path HubSpot called, keyed by the app's client secret. */
  verifySignature(rawBody: Buffer, headers: IncomingHeaders, path?: string): boolean {
    if (!this.http.publicUrl || path === undefined) return false;
    const url = `${this.http.publicUrl.replace(/\/+$/, '')}${path}`;
    return verifyHubSpotSignature(this.config.client_secret, url, rawBody, headers);
  }

  classifyError(err: unknown): ErrorClassification {
    return classifyHubSpotError(err);
  }

  /**
   * A file of a reply written in HubSpot, by its file id: its signed URL asked of the Files API with
   * the app's token (the files are private), refused when HubSpot says it is over the media limit,
   * then its bytes from that URL, cut at the limit.
   */
  async fetchMedia(fileId: string): Promise<FetchedMedia> {
    if (!FILE_ID.test(fileId)) throw new ProviderError('invalid_media_id', 'not a HubSpot file id', false);
    const signed = object(await this.client.call('GET', `/files/v3/files/${fileId}/signed-url`));
    const limit = this.client.maxMediaBytes;
    if (typeof signed.size === 'number' && signed.size > limit)
      throw new ProviderError('media_too_large', `file ${fileId} is larger than ${limit} bytes`, false);
    if (typeof signed.url !== 'string' || !/^https?:\/\//.test(signed.url))
      throw new ProviderError('invalid_response', `HubSpot answered no URL for file ${fileId}`, true);
    const { bytes, contentType } = await this.client.download(signed.url);
    const name = typeof signed.name === 'string' && signed.name !== '' ? signed.name : undefined;
    const extension = typeof signed.extension === 'string' && signed.extension !== '' ? `.${signed.extension}` : '';
    return {
      bytes,
      mimeType: contentType?.split(';')[0].trim() || 'application/octet-stream',
      ...(name ? { filename: name.endsWith(extension) ? name : `${name}${extension}` } : {}),
    };
  }
}
