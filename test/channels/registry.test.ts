import { describe, expect, it } from 'vitest';
import { createChannelProvider, isProviderKind, type ProviderConfig } from '../../src/channels/registry.ts';
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
