import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ErrorClassification, FetchedMedia, SendRequest, SendResult } from '../channel.types.ts';
import type { ChannelProvider } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import type { WebEmbedConfig } from './web-embed.config.ts';

/** The provider id of a message sent to a visitor: the service's own id, since no vendor numbers it. */
export const sentId = (reference: string) => `web_${reference}`;

/**
 * The website widget behind the channel provider interface. There is no vendor: a message "sent"
 * is one the visitor's widget may now show. It is stored already, and the send job's SENT status
 * announces it to the live stream, whose listeners in every process hand it to the visitor's open
 * widgets; a visitor who is away reads it with the history on the next visit.
 */
export class WebEmbedProvider implements ChannelProvider {
  readonly kind = 'web_embed';

  constructor(private readonly config: WebEmbedConfig) {}

  async send(request: SendRequest): Promise<SendResult> {
    if (request.content.kind === 'template')
      throw new ProviderError('unsupported', 'the website widget sends no templates', false);
    if (!request.reference) throw new ProviderError('unsupported', 'a widget message needs its reference', false);
    await request.beforeSend?.();
    return { providerMessageId: sentId(request.reference) };
  }

  /** Nothing is posted to a webhook for this kind: every notification is refused. */
  verifySignature(): boolean {
    return false;
  }

  awayMessage(): string | null {
    return this.config.away_message ?? null;
  }

  admitsOrigin(origin: string): boolean {
    return this.config.allowed_origins.includes(origin);
  }

  /**
   * Whether the site vouched for this external id: `hash` is the hex HMAC-SHA256 of it under the
   * channel's identity secret (compared in constant time). Null when the channel takes no identities.
   */
  verifiesIdentity(externalId: string, hash: string): boolean | null {
    if (!this.config.identity_secret) return null;
    const expected = createHmac('sha256', this.config.identity_secret).update(externalId).digest();
    const given = /^[0-9a-fA-F]{64}$/.test(hash) ? Buffer.from(hash, 'hex') : Buffer.alloc(0);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  classifyError(err: unknown): ErrorClassification {
    if (err instanceof ProviderError) return { retryable: err.retryable, code: err.code, detail: err.message };
    return { retryable: false, code: 'internal', detail: err instanceof Error ? err.message : String(err) };
  }

  /** A visitor's files are stored when uploaded (InboundMedia.stored); none is fetched from a vendor. */
  fetchMedia(): Promise<FetchedMedia> {
    return Promise.reject(new ProviderError('unsupported', 'widget files are stored when uploaded', false));
  }
}
