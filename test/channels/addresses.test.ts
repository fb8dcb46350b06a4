import { describe, expect, it } from 'vitest';
import { phoneAddress, tiktokConversationIdAddress } from '../../src/channels/addresses.ts';
import { normalisePhone } from '../../src/lib/phone.ts';

describe('phone addresses', () => {
  it('normalise what a client gives as lib/phone does, and refuse what is no number', () => {
    for (const text of ['+54 9 11 2345-6789', '541123456789', '5215512345678', '+1 (415) 555-0100']) {
      const phone = normalisePhone(text)!;
      expect(phoneAddress.normalise(text)).toEqual({ value: phone.digits, key: phone.key });
    }
    expect(phoneAddress.normalise('5491123456789')?.key).toBe(phoneAddress.normalise('541123456789')?.key);
    for (const text of ['', 'abc', '0123456789', '12', 'ana@example.com'])
      expect(phoneAddress.normalise(text)).toBe(undefined);
  });

  it('keep what a provider reports however it reads: its digits, or the text itself when it has none', () => {
    expect(phoneAddress.reported('5491123456789')).toEqual({ value: '5491123456789', key: '541123456789' });
    expect(phoneAddress.reported('0012-34')).toEqual({ value: '001234', key: '001234' });
    expect(phoneAddress.reported('user.xyz')).toEqual({ value: null, key: 'user.xyz' });
  });
});

describe('TikTok conversation ids', () => {
  it('keep a conversation id as given (trimmed), refuse text that is none, and keep whatever TikTok reports', () => {
    const id = '0:1:7310000000000000001:7310000000000000002';
    expect(tiktokConversationIdAddress.normalise(` ${id} `)).toEqual({ value: id, key: id });
    for (const text of ['', 'two words', 'a'.repeat(257), 'ünicode', 'x\ny'])
      expect(tiktokConversationIdAddress.normalise(text)).toBe(undefined);
    expect(tiktokConversationIdAddress.reported('odd id')).toEqual({ value: 'odd id', key: 'odd id' });
    expect(tiktokConversationIdAddress.reported(' ')).toEqual({ value: null, key: ' ' });
  });
});
