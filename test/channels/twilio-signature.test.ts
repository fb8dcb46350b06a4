import { describe, expect, it } from 'vitest';
import { parseForm } from '../../src/channels/twilio-common/twilio.form.ts';
import { readTwilioNotification } from '../../src/channels/twilio/twilio.notifications.ts';
import { bodyRefusal, smsSegments } from '../../src/channels/twilio/twilio.segments.ts';
import { twilioSignature, verifyTwilioSignature } from '../../src/channels/twilio-common/twilio.signature.ts';

// Twilio's published example of request validation: auth token 12345, this URL and these parameters.
const TOKEN = '12345';
const URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const PARAMS = {
  CallSid: 'CA1234567890ABCDE',
  Caller: '+14158675309',
  Digits: '1234',
  From: '+14158675309',
  To: '+18005551212',
};
const SIGNATURE = 'RSOYDt4T1cUTdK1PDd93/VVr8B8=';

describe('X-Twilio-Signature', () => {
  it("reproduces Twilio's published example, whatever the parameters' order", () => {
    expect(twilioSignature(TOKEN, URL, PARAMS)).toBe(SIGNATURE);
    const form = parseForm(
      'To=%2B18005551212&From=%2B14158675309&Digits=1234&Caller=%2B14158675309&CallSid=CA1234567890ABCDE',
    );
    expect(verifyTwilioSignature(TOKEN, URL, form, { 'x-twilio-signature': SIGNATURE })).toBe(true);
  });

  it('takes the URL signed with or without its port, as Twilio may call it either way', () => {
    const withPort = twilioSignature(TOKEN, 'https://mycompany.com:443/myapp.php?foo=1&bar=2', PARAMS);
    expect(verifyTwilioSignature(TOKEN, URL, PARAMS, { 'x-twilio-signature': withPort })).toBe(true);
    const custom = 'https://mycompany.com:8443/myapp.php';
    const withoutPort = twilioSignature(TOKEN, 'https://mycompany.com/myapp.php', PARAMS);
    expect(verifyTwilioSignature(TOKEN, custom, PARAMS, { 'x-twilio-signature': withoutPort })).toBe(true);
    expect(verifyTwilioSignature(TOKEN, custom, PARAMS, { 'x-twilio-signature': SIGNATURE })).toBe(false);
  });

  it('refuses another token, URL or value, and a missing, repeated or malformed header', () => {
    const check = (token: string, url: string, params: Record<string, string>, header: unknown) =>
      verifyTwilioSignature(token, url, params, { 'x-twilio-signature': header as string });
    expect(check('54321', URL, PARAMS, SIGNATURE)).toBe(false);
    expect(check(TOKEN, 'https://mycompany.com/myapp.php?foo=1&bar=3', PARAMS, SIGNATURE)).toBe(false);
    expect(check(TOKEN, URL, { ...PARAMS, Digits: '9999' }, SIGNATURE)).toBe(false);
    expect(check(TOKEN, URL, PARAMS, undefined)).toBe(false);
    expect(check(TOKEN, URL, PARAMS, [SIGNATURE, SIGNATURE])).toBe(false);
    expect(check(TOKEN, URL, PARAMS, 'not base64')).toBe(false);
    expect(check('', URL, PARAMS, SIGNATURE)).toBe(false);
  });
});

describe('SMS segments', () => {
  it('counts GSM-7 in septets (escape characters take two) and anything else in UCS-2 units', () => {
    expect(smsSegments('a'.repeat(160))).toEqual({ encoding: 'GSM-7', characters: 160, segments: 1 });
    expect(smsSegments('a'.repeat(161))).toMatchObject({ encoding: 'GSM-7', segments: 2 });
    expect(smsSegments('€'.repeat(80))).toMatchObject({ encoding: 'GSM-7', segments: 1 });
    expect(smsSegments('€'.repeat(81))).toMatchObject({ encoding: 'GSM-7', segments: 2 });
    expect(smsSegments('don’t')).toMatchObject({ encoding: 'UCS-2', segments: 1 });
    expect(smsSegments('é'.repeat(70) + 'ñ')).toMatchObject({ encoding: 'GSM-7' });
    expect(smsSegments('ç'.repeat(70))).toMatchObject({ encoding: 'UCS-2', segments: 1 });
    expect(smsSegments('ç'.repeat(71))).toMatchObject({ encoding: 'UCS-2', segments: 2 });
    expect(smsSegments('😀'.repeat(35))).toMatchObject({ encoding: 'UCS-2', characters: 35, segments: 1 });
    expect(bodyRefusal('a'.repeat(1600))).toBeNull();
    expect(bodyRefusal('a'.repeat(1601))).toContain('1601');
  });
});

describe('Twilio notifications', () => {
  const base = {
    MessageSid: `SM${'1'.repeat(32)}`,
    AccountSid: `AC${'2'.repeat(32)}`,
    From: '+14155550100',
    To: '+14155550199',
  };

  it('reads an incoming SMS as addressed to To, and a status callback as addressed to From', () => {
    const sms = readTwilioNotification({ ...base, SmsStatus: 'received', Body: 'hi', NumMedia: '0' });
    expect(sms.accounts).toEqual(['+14155550199']);
    expect(sms.notification.messages[0]).toMatchObject({ type: 'text', text: 'hi', from: '+14155550100' });
    const receipt = readTwilioNotification({ ...base, MessageStatus: 'failed', ErrorCode: '30007' });
    expect(receipt.accounts).toEqual(['+14155550100']);
    expect(receipt.notification.statuses[0]).toMatchObject({ status: 'failed', errors: [{ code: '30007' }] });
    expect(readTwilioNotification({ ...base, MessageStatus: 'queued' }).notification.statuses).toEqual([]);
    expect(readTwilioNotification({ ...base, MessageStatus: 'constructor' }).notification.statuses).toEqual([]);
  });

  it('refuses a body without the fields every Twilio message notification has, and drops NULs', () => {
    expect(() => readTwilioNotification({ Body: 'hi' })).toThrow('not a Twilio message notification');
    const nul = readTwilioNotification({ ...base, Body: 'a\0b' });
    expect(nul.notification.messages[0].text).toBe('ab');
  });
});
