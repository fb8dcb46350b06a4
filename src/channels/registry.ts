import { Type, type Static, type TSchema, type TUnion } from 'typebox';
import { Value } from 'typebox/value';
import type { ChannelKind, WebhookTransport } from './channel-kind.ts';
import type { ChannelType } from './channel-types.ts';
import type { CredentialStore } from './credential-store.ts';
import type { ProviderHttpOptions } from './http-deps.ts';
import type { ChannelProvider } from './provider.ts';
import { emailKind } from './email/email.kind.ts';
import { hubSpotKind } from './hubspot/hubspot.kind.ts';
import { instagramKind } from './instagram/instagram.kind.ts';
import { messengerKind } from './messenger/messenger.kind.ts';
import { tiktokKind } from './tiktok/tiktok.kind.ts';
import { twilioKind } from './twilio/twilio.kind.ts';
import { twilioVoiceKind } from './twilio-voice/twilio-voice.kind.ts';
import { webEmbedKind } from './web-embed/web-embed.kind.ts';
import { whatsAppCloudKind } from './whatsapp-cloud/whatsapp-cloud.kind.ts';
import { whatsAppWebKind } from './whatsapp-web/whatsapp-web.kind.ts';

/**
 * Every provider kind the service can talk to. A new provider is one adapter folder exporting its
 * ChannelKind, and its line here; the core reads everything else from the entry.
 */
const kinds = [
  whatsAppCloudKind,
  twilioKind,
  emailKind,
  messengerKind,
  instagramKind,
  webEmbedKind,
  tiktokKind,
  twilioVoiceKind,
  whatsAppWebKind,
  hubSpotKind,
] as const;

/** Provider kinds the service can talk to. */
export type ProviderKind = (typeof kinds)[number]['kind'];

type Schemas<T extends readonly { schema: TSchema }[]> = { -readonly [K in keyof T]: T[K]['schema'] };

/** A channel's `provider` object, any kind (validate channel bodies with it). */
export const ProviderConfigSchema = oneOf(kinds.map((k) => k.schema) as Schemas<typeof kinds>);

/** A channel's provider configuration. */
export type ProviderConfig = Static<typeof ProviderConfigSchema>;

/** Every entry, for the checks and the routes that walk them all. */
export const channelKinds: readonly ChannelKind[] = kinds;

const byKind = new Map<string, ChannelKind>(channelKinds.map((k) => [k.kind, k]));

/** Whether `kind` names a provider this service has an adapter for. */
export function isProviderKind(kind: unknown): kind is ProviderKind {
  return typeof kind === 'string' && byKind.has(kind);
}

/** The entry of a provider kind; undefined for an unknown kind. */
export function channelKind(kind: unknown): ChannelKind | undefined {
  return typeof kind === 'string' ? byKind.get(kind) : undefined;
}

/** The secret fields of a provider kind's config, and those a channel is looked up by; none for an unknown kind. */
export function providerSecretFields(kind: unknown): {
  secretFields: readonly string[];
  lookupFields: readonly string[];
} {
  return channelKind(kind) ?? { secretFields: [], lookupFields: [] };
}

/** The provider kinds that serve a contract channel type. */
export function kindsServing(type: string): ChannelKind[] {
  return channelKinds.filter((k) => (k.channelTypes as readonly string[]).includes(type));
}

/** Channel types whose conversations are kept on another type's channel of their identifier (primaryChannelType). */
export const primaryChannelTypes: ReadonlyMap<string, ChannelType> = new Map(
  channelKinds.flatMap((k) =>
    k.primaryChannelType ? k.channelTypes.map((t) => [t, k.primaryChannelType!] as const) : [],
  ),
);

/** The contract channel types some provider kind serves with templates. */
export const templateChannelTypes: readonly ChannelType[] = [
  ...new Set(channelKinds.filter((k) => k.capabilities.templates).flatMap((k) => k.channelTypes)),
];

/** A provider kind notified by webhook, with its transport. */
export interface WebhookKind {
  entry: ChannelKind;
  transport: WebhookTransport;
}

/** The kinds whose channels mirror the business's other channels (ChannelCapabilities.mirrors). */
export const mirroringKinds: readonly string[] = channelKinds.filter((k) => k.capabilities.mirrors).map((k) => k.kind);

/** The kinds whose people hold a connection to the service (the website widget). */
export function socketKinds(): ChannelKind[] {
  return channelKinds.filter((k) => k.inbound.type === 'socket' && !k.inbound.linked);
}

/** A kind the inbound poller reads: its entry, its interval, and whether it is linked as a device. */
export interface ReadKind {
  entry: ChannelKind;
  intervalMs: number;
  linked: boolean;
}

/**
 * The kinds the service reads itself, one process per channel (the inbound poller): polled ones
 * (a mailbox) and those linked as a device (WhatsApp Web), with the milliseconds between two looks.
 */
export function readKinds(): ReadKind[] {
  return channelKinds.flatMap((entry): ReadKind[] => {
    if (entry.inbound.type === 'poller') return [{ entry, intervalMs: entry.inbound.intervalMs, linked: false }];
    if (entry.inbound.type === 'socket' && entry.inbound.linked)
      return [{ entry, intervalMs: entry.inbound.linked.intervalMs, linked: true }];
    return [];
  });
}

/** The webhook kinds by every path segment they answer under (`/channels/<segment>/webhook`): kind and aliases. */
export function webhookSegments(): Map<string, WebhookKind> {
  const segments = new Map<string, WebhookKind>();
  for (const entry of channelKinds) {
    if (entry.inbound.type !== 'webhook') continue;
    for (const segment of [entry.kind, ...entry.inbound.aliases])
      segments.set(segment, { entry, transport: entry.inbound });
  }
  return segments;
}

/** The path a webhook kind's notifications are posted to (and its handshake asked at); undefined for other kinds. */
export function webhookPath(entry: ChannelKind): string | undefined {
  return entry.inbound.type === 'webhook' ? `/channels/${entry.kind}/webhook` : undefined;
}

/**
 * What PATCH may replace of a provider config, whatever the kind: each kind's rotating and
 * changeable fields, optional; a field several kinds have (`api_base_url`) takes any of their
 * schemas. The service checks that the fields sent are the channel's kind's.
 */
export function providerUpdateProperties(): Record<string, TSchema> {
  const variants = new Map<string, TSchema[]>();
  for (const entry of channelKinds) {
    for (const field of [...entry.rotatingFields, ...entry.changeableFields]) {
      const schema = entry.schema.properties[field];
      const known = variants.get(field) ?? [];
      // Kinds of one vendor share a field's schema (Meta's access_token): it is one variant.
      if (!known.some((other) => JSON.stringify(other) === JSON.stringify(schema))) known.push(schema);
      variants.set(field, known);
    }
  }
  const properties: Record<string, TSchema> = {};
  for (const [field, schemas] of variants)
    properties[field] = Type.Optional(schemas.length === 1 ? schemas[0] : Type.Union(schemas));
  return properties;
}

/** The provider account a config names (the field its kind declares), or null. */
export function providerAccountOf(config: ProviderConfig): string | null {
  const entry = channelKind(config.kind);
  const account = entry ? (config as Record<string, unknown>)[entry.accountField] : undefined;
  return typeof account === 'string' ? account : null;
}

/**
 * The adapter for a stored provider configuration. Throws when the kind is unknown or the
 * configuration does not match its schema (a row written by an older version, say). `credentials`
 * is where a kind that renews its own secrets writes them (the channel's stored config).
 */
export function createChannelProvider(
  config: ProviderConfig,
  http?: ProviderHttpOptions,
  credentials?: CredentialStore,
): ChannelProvider {
  const kind: unknown = (config as { kind?: unknown }).kind;
  const entry = channelKind(kind);
  if (!entry) throw new Error(`unknown channel provider kind: ${String(kind)}`);
  if (!Value.Check(entry.schema, config)) throw new Error(`invalid configuration for channel provider ${entry.kind}`);
  return entry.create(config, http, credentials);
}

/** The schemas as one: a union of two or more, or the one itself (an anyOf of one is not valid OpenAPI style). */
function oneOf<T extends TSchema[]>(schemas: [...T]) {
  return (schemas.length === 1 ? schemas[0] : Type.Union(schemas)) as TUnion<T>;
}
