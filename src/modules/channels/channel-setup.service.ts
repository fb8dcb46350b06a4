import { randomBytes } from 'node:crypto';
import type { TSchema } from 'typebox';
import type { ChannelKind } from '../../channels/channel-kind.ts';
import { channelKind, channelKinds, webhookPath, type ProviderConfig } from '../../channels/registry.ts';
import type { ChannelsService } from './channels.service.ts';
import type { ChannelForm } from './channels.schemas.ts';
import type { ConnectChannelBody, SettingsChannel } from './channel-setup.schemas.ts';

/** How a secret is shown: that it is set, never any of its characters. */
export const SECRET_MASK = '••••••••';

/** The field of a kind's subscription handshake (Meta's verify token), when it has one. */
function handshakeField(entry: ChannelKind): string | undefined {
  return entry.inbound.type === 'webhook' ? entry.inbound.handshake?.lookupField : undefined;
}

/**
 * The dashboard's channel settings over the channels service: the forms of the kinds (from the
 * registry's schemas), connecting a channel with its webhook's address and handshake token, and
 * channels shown with their secrets masked.
 */
export class ChannelSetupService {
  constructor(
    private readonly channels: ChannelsService,
    private readonly publicUrl: string,
  ) {}

  /** Each kind's form: its config fields (but `kind`), which are secret, and the webhook address. */
  kinds() {
    return channelKinds.map((entry) => {
      const properties = entry.schema.properties as Record<string, TSchema & Record<string, unknown>>;
      const required = new Set<string>((entry.schema.required as string[] | undefined) ?? []);
      const handshake = handshakeField(entry);
      const fields = Object.entries(properties)
        .filter(([name]) => name !== 'kind')
        .map(([name, schema]) => ({
          name,
          description: typeof schema.description === 'string' ? schema.description : '',
          type: entry.urlFields.includes(name) ? ('url' as const) : ('text' as const),
          required: required.has(name) && name !== handshake,
          secret: entry.secretFields.includes(name),
          ...(typeof schema.pattern === 'string' ? { pattern: schema.pattern } : {}),
          ...(typeof schema.maxLength === 'number' ? { max_length: schema.maxLength } : {}),
        }));
      return {
        kind: entry.kind,
        title: entry.title,
        channel_types: [...entry.channelTypes],
        webhook_url: this.webhookUrl(entry),
        fields,
      };
    });
  }

  /**
   * Connects a channel: the handshake's token is made up when not given, and answered once with the
   * address the provider posts to, so the person can paste both into the provider's settings.
   */
  async connect(businessId: string, body: ConnectChannelBody) {
    const entry = channelKind(body.provider.kind);
    const field = entry && handshakeField(entry);
    const provider: Record<string, unknown> = { ...body.provider };
    if (field && provider[field] === undefined) provider[field] = randomBytes(24).toString('base64url');
    const channel = await this.channels.create(businessId, { ...body, provider: provider as ProviderConfig });
    return {
      channel: this.shown(channel),
      webhook: {
        url: entry ? this.webhookUrl(entry) : null,
        verify_token: field ? (provider[field] as string) : null,
      },
    };
  }

  async list(businessId: string, limit: number): Promise<SettingsChannel[]> {
    return (await this.channels.list(businessId, limit)).map((c) => this.shown(c));
  }

  /** Renames or re-paces a channel; its secrets change only through the operator API. */
  async edit(
    businessId: string,
    id: string,
    changes: { name?: string; pace_per_second?: number; agent_id?: string | null },
  ) {
    return this.shown(await this.channels.update(businessId, id, changes));
  }

  private shown(channel: ChannelForm): SettingsChannel {
    const entry = channel.provider ? channelKind(channel.provider.kind) : undefined;
    return {
      ...channel,
      webhook_url: entry ? this.webhookUrl(entry) : null,
      secrets: Object.fromEntries((entry?.secretFields ?? []).map((f) => [f, SECRET_MASK])),
    };
  }

  private webhookUrl(entry: ChannelKind): string | null {
    const path = webhookPath(entry);
    return path ? `${this.publicUrl}${path}` : null;
  }
}
