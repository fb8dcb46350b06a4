import { describe, expect, it } from 'vitest';
import { WhatsAppCloudProvider } from '../../src/channels/whatsapp-cloud/whatsapp-cloud.provider.ts';
import { answerHubChallenge } from '../../src/channels/meta/meta.signature.ts';
import { inboundMessage, metaNotification, signedNotification } from '../helpers/fake-graph-api.ts';

const APP_SECRET = '9f1c2a7e5b3d4c6a8e0f1b2c3d4e5f60';
const provider = new WhatsAppCloudProvider({
  kind: 'whatsapp_cloud',
  phone_number_id: '106540352242922',
  access_token: 'token',
  app_secret: APP_SECRET,
  verify_token: 'my-verify-token',
});

// Meta's bytes are not what JSON.stringify would produce: spacing and escaped non-ASCII.
const metaBytes = JSON.stringify(
  metaNotification({
    phoneNumberId: '106540352242922',
    messages: [inboundMessage('15551234567', 'text', { body: 'Hola ñandú 👋' })],
  }),
  null,
  1,
).replace(/ñ/g, '\\u00f1');

describe('WhatsApp Cloud notification signature', () => {
  it('accepts the HMAC-SHA256 of the raw bytes with the app secret', () => {
    const { payload, headers } = signedNotification(metaBytes, APP_SECRET);
    expect(provider.verifySignature(Buffer.from(payload), headers)).toBe(true);
  });

  it('accepts an upper-case hex digest', () => {
    const { payload, headers } = signedNotification(metaBytes, APP_SECRET);
    const upper = {
      'x-hub-signature-256': headers['x-hub-signature-256'].replace(/[0-9a-f]{64}$/, (h) => h.toUpperCase()),
    };
    expect(provider.verifySignature(Buffer.from(payload), upper)).toBe(true);
  });

  it('refuses a body signed with another secret', () => {
    const { payload, headers } = signedNotification(metaBytes, 'another-secret');
    expect(provider.verifySignature(Buffer.from(payload), headers)).toBe(false);
  });

  it('refuses a missing header', () => {
    expect(provider.verifySignature(Buffer.from(metaBytes), { 'content-type': 'application/json' })).toBe(false);
  });

  it('refuses a tampered body', () => {
    const { headers } = signedNotification(metaBytes, APP_SECRET);
    expect(provider.verifySignature(Buffer.from(metaBytes.replace('Hola', 'Chau')), headers)).toBe(false);
  });

  it('refuses the same JSON re-serialised (the check must run on the raw bytes)', () => {
    const { headers } = signedNotification(metaBytes, APP_SECRET);
    const reserialised = JSON.stringify(JSON.parse(metaBytes));
    expect(reserialised).not.toBe(metaBytes);
    expect(provider.verifySignature(Buffer.from(reserialised), headers)).toBe(false);
  });

  it.each([
    ['no sha256= prefix', (hex: string) => hex],
    ['sha1 scheme', (hex: string) => `sha1=${hex}`],
    ['a truncated digest', (hex: string) => `sha256=${hex.slice(0, 40)}`],
    ['non-hex characters', (hex: string) => `sha256=${hex.slice(0, 63)}z`],
    ['an empty value', () => ''],
  ])('refuses a malformed header: %s', (_name, make) => {
    const hex = signedNotification(metaBytes, APP_SECRET).headers['x-hub-signature-256'].slice('sha256='.length);
    expect(provider.verifySignature(Buffer.from(metaBytes), { 'x-hub-signature-256': make(hex) })).toBe(false);
  });

  it('refuses a repeated header', () => {
    const { payload, headers } = signedNotification(metaBytes, APP_SECRET);
    const value = headers['x-hub-signature-256'];
    expect(provider.verifySignature(Buffer.from(payload), { 'x-hub-signature-256': [value, value] })).toBe(false);
  });
});

describe('WhatsApp Cloud webhook verification (hub.challenge)', () => {
  const query = { 'hub.mode': 'subscribe', 'hub.verify_token': 'my-verify-token', 'hub.challenge': '1158201444' };

  it('echoes the challenge when the mode is subscribe and the token matches', () => {
    expect(provider.verifySubscription(query)).toBe('1158201444');
  });

  it.each([
    ['a wrong token', { ...query, 'hub.verify_token': 'guess' }],
    ['a token prefix', { ...query, 'hub.verify_token': 'my-verify' }],
    ['another mode', { ...query, 'hub.mode': 'unsubscribe' }],
    ['no token', { 'hub.mode': 'subscribe', 'hub.challenge': '1' }],
    ['no challenge', { 'hub.mode': 'subscribe', 'hub.verify_token': 'my-verify-token' }],
    ['a repeated token', { ...query, 'hub.verify_token': ['my-verify-token', 'x'] }],
  ])('refuses %s', (_name, q) => {
    expect(provider.verifySubscription(q)).toBeNull();
  });

  it('refuses everything when no verify token is configured', () => {
    expect(answerHubChallenge({ ...query, 'hub.verify_token': '' }, '')).toBeNull();
  });
});
