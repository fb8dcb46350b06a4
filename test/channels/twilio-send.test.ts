import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/channels/provider.ts';
import { TwilioProvider } from '../../src/channels/twilio/twilio.provider.ts';
import { startFakeTwilioApi, type FakeTwilioApi } from '../helpers/fake-twilio-api.ts';

let twilio: FakeTwilioApi;
let provider: TwilioProvider;
const FROM = '+15550001111';

beforeAll(async () => {
  twilio = await startFakeTwilioApi();
  provider = new TwilioProvider(
    {
      kind: 'twilio',
      account_sid: twilio.accountSid,
      auth_token: twilio.authToken,
      from_number: FROM,
      api_base_url: twilio.baseUrl,
    },
    { publicUrl: 'https://messaging.example' },
  );
});
afterAll(() => twilio.close());
beforeEach(() => twilio.reset());

describe('Twilio adapter', () => {
  it('sends with the E.164 recipient and answers the message sid and its status', async () => {
    const result = await provider.send({ to: '14155550100', content: { kind: 'text', text: 'Hi' } });
    expect(result).toEqual({ providerMessageId: expect.stringMatching(/^SM[0-9a-f]{32}$/), providerStatus: 'queued' });
    expect(twilio.sends()[0].form).toEqual({
      To: '+14155550100',
      From: FROM,
      Body: 'Hi',
      StatusCallback: 'https://messaging.example/channels/twilio/webhook',
    });
  });

  it('writes nothing when beforeSend rejects, and refuses templates', async () => {
    await expect(
      provider.send({
        to: '14155550100',
        content: { kind: 'text', text: 'Hi' },
        beforeSend: () => Promise.reject(new Error('not this one')),
      }),
    ).rejects.toThrow('not this one');
    await expect(
      provider.send({ to: '14155550100', content: { kind: 'template', name: 'x', languageCode: 'en' } }),
    ).rejects.toBeInstanceOf(ProviderError);
    expect(twilio.sends()).toHaveLength(0);
  });

  it("answers Twilio's error as a ProviderError with its code", async () => {
    twilio.failNextSends(1, { status: 400, code: 21211, message: "The 'To' number is not a valid phone number." });
    const err = await provider.send({ to: '1', content: { kind: 'text', text: 'Hi' } }).catch((e: unknown) => e);
    expect(provider.classifyError(err)).toMatchObject({ retryable: false, code: '21211' });
  });

  it("downloads media only from the account's own media URLs, with its credentials", async () => {
    const url = twilio.addMedia(Buffer.from('bytes'), 'image/jpeg');
    expect(await provider.fetchMedia(url)).toMatchObject({ mimeType: 'image/jpeg', fileSize: 5 });
    const elsewhere = 'https://attacker.example/2010-04-01/Accounts/x/Messages/MM1/Media/ME1';
    await expect(provider.fetchMedia(elsewhere)).rejects.toMatchObject({ code: 'invalid_media_url' });
    const otherAccount = url.replace(twilio.accountSid, `AC${'0'.repeat(32)}`);
    await expect(provider.fetchMedia(otherAccount)).rejects.toMatchObject({ code: 'invalid_media_url' });
  });

  it('verifies a signature only with the public URL, the account and the auth token', () => {
    expect(provider.verifySignature(Buffer.from('AccountSid=x'), {}, undefined)).toBe(false);
    const unsigned = new TwilioProvider(
      { kind: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from_number: FROM },
      {},
    );
    expect(
      unsigned.verifySignature(Buffer.from(`AccountSid=${twilio.accountSid}`), {}, '/channels/twilio/webhook'),
    ).toBe(false);
  });
});
