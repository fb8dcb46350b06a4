import { providerSecretFields } from '../../channels/registry.ts';
import type { SecretBox } from '../../lib/secret-box.ts';

/** A provider config as stored (channels.provider_config). */
export type StoredProviderConfig = Record<string, unknown>;

/** The value at a field's path (`smtp.password`: the `password` of the `smtp` object). */
function valueAt(config: Record<string, unknown>, path: string): unknown {
  let value: unknown = config;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A copy of `config` with the value at `path` replaced (the nested objects on the way copied, never changed). */
function withValueAt(config: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const [key, ...rest] = path.split('.');
  if (rest.length === 0) return { ...config, [key]: value };
  const inner = config[key];
  if (typeof inner !== 'object' || inner === null) return config;
  return { ...config, [key]: withValueAt(inner as Record<string, unknown>, rest.join('.'), value) };
}

/** The stored field that holds the digest of lookup field `field`. */
export const digestField = (field: string) => `${field}_digest`;

/**
 * A provider config as stored: its secret fields (top-level, or paths into nested objects: `smtp.password`)
 * sealed with the current key (the registry names
 * them per kind) and, beside each field a channel is looked up by, its digest. Fields already
 * sealed with the current key stay as they are; those sealed with a fallback are sealed again.
 */
export function sealProviderConfig(box: SecretBox, config: Record<string, unknown>): StoredProviderConfig {
  const { secretFields, lookupFields } = providerSecretFields(config.kind);
  let stored: StoredProviderConfig = { ...config };
  for (const field of lookupFields) {
    const value = config[field];
    if (typeof value === 'string') stored[digestField(field)] = box.digest(box.open(value));
  }
  for (const field of secretFields) {
    const value = valueAt(config, field);
    if (typeof value === 'string') stored = withValueAt(stored, field, box.reseal(value));
  }
  return stored;
}

/** The provider config a stored one holds: secrets opened, digests left out. */
export function openProviderConfig(box: SecretBox, stored: StoredProviderConfig): Record<string, unknown> {
  const { secretFields, lookupFields } = providerSecretFields(stored.kind);
  let config: Record<string, unknown> = { ...stored };
  for (const field of lookupFields) delete config[digestField(field)];
  for (const field of secretFields) {
    const value = valueAt(config, field);
    if (typeof value === 'string') config = withValueAt(config, field, box.open(value));
  }
  return config;
}
