import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChannelKind } from '../../src/channels/channel-kind.ts';
import { CHANNELS } from '../../src/channels/channel-types.ts';
import {
  channelKind,
  channelKinds,
  createChannelProvider,
  isProviderKind,
  kindsServing,
  providerAccountOf,
  providerUpdateProperties,
  templateChannelTypes,
  webhookSegments,
  type ProviderConfig,
} from '../../src/channels/registry.ts';
import { WhatsAppCloudProvider } from '../../src/channels/whatsapp-cloud/whatsapp-cloud.provider.ts';

const config: ProviderConfig = {
  kind: 'whatsapp_cloud',
  phone_number_id: '106540352242922',
  access_token: 'token',
  app_secret: 'secret',
  verify_token: 'verify',
};

describe('channel provider registry', () => {
  it('builds the WhatsApp Cloud adapter for its kind', () => {
    const provider = createChannelProvider(config);
    expect(provider).toBeInstanceOf(WhatsAppCloudProvider);
    expect(provider.kind).toBe('whatsapp_cloud');
  });

  it('knows only the kinds it has adapters for', () => {
    expect(isProviderKind('whatsapp_cloud')).toBe(true);
    expect(isProviderKind('telegram')).toBe(false);
    expect(isProviderKind('toString')).toBe(false);
    expect(isProviderKind(undefined)).toBe(false);
  });

  it('refuses an unknown kind and a configuration that does not match the schema', () => {
    expect(() => createChannelProvider({ ...config, kind: 'telegram' } as unknown as ProviderConfig)).toThrow(
      /unknown channel provider kind/,
    );
    expect(() => createChannelProvider({ ...config, phone_number_id: '+1 555' })).toThrow(/invalid configuration/);
    expect(() => createChannelProvider({ ...config, extra: 1 } as unknown as ProviderConfig)).toThrow(
      /invalid configuration/,
    );
    expect(() => createChannelProvider({ ...config, api_base_url: 'ftp://x' })).toThrow(/invalid configuration/);
  });
});

describe('each registry entry', () => {
  const properties = (entry: ChannelKind) => Object.keys(entry.schema.properties);
  /** The fields of the schema and of its nested objects, as paths (`smtp.password`). */
  const paths = (entry: ChannelKind) =>
    Object.entries(entry.schema.properties as Record<string, { properties?: Record<string, unknown> }>).flatMap(
      ([name, schema]) => [name, ...Object.keys(schema.properties ?? {}).map((inner) => `${name}.${inner}`)],
    );
  /** Whether a field is a secret, or an object holding one (replaced whole). */
  const holdsSecret = (entry: ChannelKind, field: string) =>
    entry.secretFields.some((secret) => secret === field || secret.startsWith(`${field}.`));

  it.each(channelKinds.map((entry) => [entry.kind, entry] as const))('%s is complete and consistent', (kind, entry) => {
    // Its schema names its kind, and every field the entry lists is one of the schema's.
    expect(entry.schema.properties.kind).toMatchObject({ const: kind });
    expect(isProviderKind(kind)).toBe(true);
    expect(channelKind(kind)).toBe(entry);
    const fields = [...entry.rotatingFields, ...entry.changeableFields, ...entry.lookupFields, entry.accountField];
    for (const field of fields) expect(properties(entry), field).toContain(field);
    for (const field of [...entry.secretFields, ...(entry.hostFields ?? [])])
      expect(paths(entry), field).toContain(field);
    // Rotating fields are secrets or hold one, lookup fields are secrets (stored sealed; lookups go by
    // digest); changeable ones are not, and hold none.
    for (const field of entry.rotatingFields) expect(holdsSecret(entry, field), field).toBe(true);
    for (const field of entry.lookupFields) expect(entry.secretFields).toContain(field);
    for (const field of entry.changeableFields) expect(holdsSecret(entry, field), field).toBe(false);
    for (const field of entry.hostFields ?? []) expect(entry.secretFields).not.toContain(field);
    // URL fields are shown (without credentials) and checked against the address policy: never secrets.
    for (const field of entry.urlFields) {
      expect(properties(entry), field).toContain(field);
      expect(entry.secretFields).not.toContain(field);
    }
    // The account a channel is found by never changes, and is no secret.
    expect([...entry.rotatingFields, ...entry.changeableFields, ...entry.secretFields]).not.toContain(
      entry.accountField,
    );
    expect([...entry.rotatingFields, ...entry.changeableFields]).not.toContain('kind');
    // It serves contract channel types only, at least one.
    expect(entry.channelTypes.length).toBeGreaterThan(0);
    for (const type of entry.channelTypes) expect(CHANNELS).toContain(type);
    expect([
      'phone',
      'email',
      'page_scoped_id',
      'instagram_scoped_id',
      'tiktok_conversation_id',
      'visitor_id',
    ]).toContain(entry.address.kind);
    // Fields an adapter renews itself are the schema's, and never the account nor the kind.
    for (const field of entry.renewedFields ?? []) expect(properties(entry), field).toContain(field);
    expect(entry.renewedFields ?? []).not.toContain(entry.accountField);
    const { serviceWindowHours, defaultPacePerSecond, mediaKinds } = entry.capabilities;
    if (serviceWindowHours !== null) expect(serviceWindowHours).toBeGreaterThan(0);
    expect(Number.isInteger(defaultPacePerSecond) && defaultPacePerSecond >= 1 && defaultPacePerSecond <= 1000).toBe(
      true,
    );
    for (const media of mediaKinds) expect(['image', 'audio', 'video', 'document', 'sticker']).toContain(media);
    expect(entry.createDocs).toContain(kind);
    // Its adapter folder is named after it (eslint.config.js reads the kinds from the folders).
    expect(existsSync(new URL(`../../src/channels/${kind.replaceAll('_', '-')}/`, import.meta.url)), kind).toBe(true);
    if (entry.inbound.type === 'webhook') {
      expect(entry.inbound.refusals.unknownAccount).not.toBe('');
      expect(entry.inbound.refusals.badSignature).not.toBe('');
      if (entry.inbound.handshake) expect(entry.lookupFields).toContain(entry.inbound.handshake.lookupField);
    }
  });

  it('answers under distinct webhook path segments: each kind and its aliases', () => {
    const segments = channelKinds.flatMap((entry) =>
      entry.inbound.type === 'webhook' ? [entry.kind, ...entry.inbound.aliases] : [],
    );
    expect(new Set(segments).size).toBe(segments.length);
    expect([...webhookSegments().keys()].sort()).toEqual([...segments].sort());
    expect(webhookSegments().get('whatsapp')?.entry.kind).toBe('whatsapp_cloud');
    expect(webhookSegments().get('whatsapp_cloud')?.entry.kind).toBe('whatsapp_cloud');
  });

  it('builds the operator rotation schema from the rotating and changeable fields of every kind', () => {
    const expected = new Set(channelKinds.flatMap((entry) => [...entry.rotatingFields, ...entry.changeableFields]));
    const rotation = providerUpdateProperties();
    expect(new Set(Object.keys(rotation))).toEqual(expected);
    for (const entry of channelKinds)
      for (const field of [...entry.rotatingFields, ...entry.changeableFields]) {
        // A field several kinds have takes any of their schemas.
        const property = rotation[field] as { anyOf?: unknown[] };
        const own = { ...entry.schema.properties[field] } as { anyOf?: unknown[] };
        // A field that is a union itself (a mode) is one variant unless another kind's differs.
        if (property.anyOf && !own.anyOf) expect(property.anyOf).toContainEqual(expect.objectContaining(own));
        else expect(property).toMatchObject(own);
      }
  });

  it('serves templates on the channel types whose kind says so', () => {
    expect(templateChannelTypes).toEqual(['whatsapp']);
    expect(kindsServing('whatsapp').map((entry) => entry.kind)).toEqual(['whatsapp_cloud']);
    expect(kindsServing('whatsapp_web').map((entry) => entry.kind)).toEqual(['whatsapp_web']);
    expect(kindsServing('instagram').map((entry) => entry.kind)).toEqual(['instagram']);
    expect(kindsServing('tiktok').map((entry) => entry.kind)).toEqual(['tiktok']);
    expect(kindsServing('voice').map((entry) => entry.kind)).toEqual(['twilio_voice']);
    expect(kindsServing('hubspot_chat').map((entry) => entry.kind)).toEqual(['hubspot']);
  });

  it('finds the account a config names by the field its kind declares', () => {
    expect(providerAccountOf(config)).toBe('106540352242922');
  });
});
