import { describe, expect, it } from 'vitest';
import { phoneAddress } from '../../src/channels/addresses.ts';
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
