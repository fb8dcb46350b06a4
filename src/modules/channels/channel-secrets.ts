import { providerSecretFields } from '../../channels/registry.ts';
import type { SecretBox } from '../../lib/secret-box.ts';

/** A provider config as stored (channels.provider_config). */
export type StoredProviderConfig = Record<string, unknown>;

/** The stored field that holds the digest of lookup field `field`. */
export const digestField = (field: string) => `${field}_digest`;

/**
 * A provider config as stored: its secret fields sealed with the current key (the registry names
 * them per kind) and, beside each field a channel is looked up by, its digest. Fields already
 * sealed with the current key stay as they are; those sealed with a fallback are sealed again.
 */
export function sealProviderConfig(box: SecretBox, config: Record<string, unknown>): StoredProviderConfig {
  const { secretFields, lookupFields } = providerSecretFields(config.kind);
  const stored: StoredProviderConfig = { ...config };
  for (const field of lookupFields) {
    const value = config[field];
    if (typeof value === 'string') stored[digestField(field)] = box.digest(box.open(value));
  }
  for (const field of secretFields) {
    const value = config[field];
    if (typeof value === 'string') stored[field] = box.reseal(value);
  }
  return stored;
}

/** The provider config a stored one holds: secrets opened, digests left out. */
export function openProviderConfig(box: SecretBox, stored: StoredProviderConfig): Record<string, unknown> {
  const { secretFields, lookupFields } = providerSecretFields(stored.kind);
  const config: Record<string, unknown> = { ...stored };
  for (const field of lookupFields) delete config[digestField(field)];
  for (const field of secretFields) {
    const value = config[field];
    if (typeof value === 'string') config[field] = box.open(value);
  }
  return config;
}
