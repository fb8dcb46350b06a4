import { Type, type Static, type TSchema, type TUnion } from 'typebox';
import { Value } from 'typebox/value';
import type { ProviderHttpOptions } from './http-deps.ts';
import type { ChannelProvider } from './provider.ts';
import { WhatsAppCloudConfigSchema } from './whatsapp-cloud/whatsapp-cloud.config.ts';
import { WhatsAppCloudProvider } from './whatsapp-cloud/whatsapp-cloud.provider.ts';

/**
 * Every provider kind with its config schema and factory, the fields of its config that are
 * secrets (stored sealed, channel-secrets.ts), and those of them a channel is looked up by. A new
 * channel is one adapter folder plus one entry here (and its schema in the union below).
 */
const providers = {
  whatsapp_cloud: {
    schema: WhatsAppCloudConfigSchema,
    create: (config: Static<typeof WhatsAppCloudConfigSchema>, http?: ProviderHttpOptions) =>
      new WhatsAppCloudProvider(config, http),
    secretFields: ['access_token', 'app_secret', 'verify_token'],
    lookupFields: ['verify_token'],
  },
} as const;

/** Provider kinds the service can talk to. */
export type ProviderKind = keyof typeof providers;

/** A channel's `provider` object, any kind (validate channel bodies with it). */
export const ProviderConfigSchema = oneOf([WhatsAppCloudConfigSchema]);

/** A channel's provider configuration. */
export type ProviderConfig = Static<typeof ProviderConfigSchema>;

/** Whether `kind` names a provider this service has an adapter for. */
export function isProviderKind(kind: unknown): kind is ProviderKind {
  return typeof kind === 'string' && Object.hasOwn(providers, kind);
}

/** The secret fields of a provider kind's config, and those a channel is looked up by; none for an unknown kind. */
export function providerSecretFields(kind: unknown): {
  secretFields: readonly string[];
  lookupFields: readonly string[];
} {
  return isProviderKind(kind) ? providers[kind] : { secretFields: [], lookupFields: [] };
}

/**
 * The adapter for a stored provider configuration. Throws when the kind is unknown or the
 * configuration does not match its schema (a row written by an older version, say).
 */
export function createChannelProvider(config: ProviderConfig, http?: ProviderHttpOptions): ChannelProvider {
  const kind: unknown = (config as { kind?: unknown }).kind;
  if (!isProviderKind(kind)) throw new Error(`unknown channel provider kind: ${String(kind)}`);
  const entry = providers[kind];
  if (!Value.Check(entry.schema, config)) throw new Error(`invalid configuration for channel provider ${kind}`);
  return entry.create(config, http);
}

/** The schemas as one: a union of two or more, or the one itself (an anyOf of one is not valid OpenAPI style). */
function oneOf<T extends TSchema[]>(schemas: [...T]) {
  return (schemas.length === 1 ? schemas[0] : Type.Union(schemas)) as TUnion<T>;
}
