import type {
  ErrorClassification,
  FetchedMedia,
  IncomingHeaders,
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
   */
  async mirror(message: MirroredMessage): Promise<void> {
    const sender = deliveryIdentifier(message.sender.addressKind, message.sender.address);
    await this.client.call('POST', `/conversations/v3/custom-channels/${this.config.channel_id}/messages`, {
      type: 'MESSAGE',
      text: message.text,
      messageDirection: 'INCOMING',
      integrationThreadId: message.conversationId,
      integrationIdempotencyId: message.id,
      channelAccountId: this.config.channel_account_id,
      senders: [{ ...(message.sender.name ? { name: message.sender.name } : {}), deliveryIdentifier: sender }],
      recipients: [{ deliveryIdentifier: { type: 'CHANNEL_SPECIFIC_OPAQUE_ID', value: message.to } }],
      timestamp: message.createdAt,
    });
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

  fetchMedia(): Promise<FetchedMedia> {
    return Promise.reject(new ProviderError('unsupported', 'nothing is downloaded from HubSpot', false));
  }
}
