import { randomBytes } from 'node:crypto';
import type { TSchema } from 'typebox';
import type { ChannelKind } from '../../channels/channel-kind.ts';
import { channelKind, channelKinds, readKinds, webhookPath, type ProviderConfig } from '../../channels/registry.ts';
import type { ChannelsService } from './channels.service.ts';
import type { ChannelForm } from './channels.schemas.ts';
import type { ConnectChannelBody, SettingsChannel } from './channel-setup.schemas.ts';

/** How a secret is shown: that it is set, never any of its characters. */
export const SECRET_MASK = '••••••••';

type FieldSchema = TSchema & Record<string, unknown>;

/** The form fields of an object schema's properties (but `kind`), nested objects' fields by their path. */
function formFields(entry: ChannelKind, schema: TSchema, prefix: string, required: boolean) {
  const properties = (schema as { properties?: Record<string, FieldSchema> }).properties ?? {};
  const needed = new Set<string>((schema as { required?: string[] }).required ?? []);
  return Object.entries(properties).flatMap(([key, field]): FormFieldRow[] => {
    const name = `${prefix}${key}`;
    if (name === 'kind') return [];
    if (field.type === 'object') return formFields(entry, field, `${name}.`, required && needed.has(key));
    const type: FormFieldRow['type'] = entry.urlFields.includes(name)
      ? 'url'
      : field.type === 'integer'
        ? 'integer'
        : field.type === 'boolean'
          ? 'boolean'
          : field.type === 'array'
            ? 'list'
            : 'text';
    return [
      {
        name,
        description:
          (typeof field.description === 'string' ? field.description : '') +
          (type === 'list' ? ' (several: separated by spaces or commas)' : ''),
        type,
        required: required && needed.has(key),
        secret: entry.secretFields.includes(name),
        ...(typeof field.pattern === 'string' ? { pattern: field.pattern } : {}),
        ...(typeof field.maxLength === 'number' ? { max_length: field.maxLength } : {}),
      },
    ];
  });
}

/** One field of a kind's form (channel-setup.schemas.ts FormField). */
interface FormFieldRow {
  name: string;
  description: string;
  /** `list`: an array of texts, typed as one text whose items are separated by spaces or commas. */
  type: 'text' | 'url' | 'integer' | 'boolean' | 'list';
  required: boolean;
  secret: boolean;
  pattern?: string;
  max_length?: number;
}

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

  /**
   * Each kind's form: its config fields (but `kind`), which are secret, and the webhook address. A
   * nested object's fields (an email channel's `smtp`) are fields of the form too, named by their
   * path (`smtp.host`), required when the object and the field are.
   */
  kinds() {
    return channelKinds.map((entry) => {
      const handshake = handshakeField(entry);
      // The handshake's token is made up when left out (connect).
      const fields = formFields(entry, entry.schema, '', true).map((f) =>
        f.name === handshake ? { ...f, required: false } : f,
      );
      return {
        kind: entry.kind,
        title: entry.title,
        channel_types: [...entry.channelTypes],
        address_kind: entry.address.kind,
        webhook_url: this.webhookUrl(entry),
        // A channel addressed by phone or email is named by its number or address; any other by its account.
        identifier_field: ['phone', 'email'].includes(entry.address.kind) ? null : entry.accountField,
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
      linked: readKinds().some((k) => k.linked && k.entry === entry),
    };
  }

  private webhookUrl(entry: ChannelKind): string | null {
    const path = webhookPath(entry);
    return path ? `${this.publicUrl}${path}` : null;
  }
}
