import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { describe, expect, it } from 'vitest';
import { normalisePhone, phoneKey } from '../../src/lib/phone.ts';

/** A seeded generator (mulberry32), so a failure names a number that fails again. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('normalisePhone', () => {
  it('keeps the digits and keys the number by calling code and national number', () => {
    expect(normalisePhone('+1 (415) 555-0100')).toEqual({ digits: '14155550100', key: '14155550100' });
    expect(normalisePhone(' 447911123456 ')).toEqual({ digits: '447911123456', key: '447911123456' });
    expect(normalisePhone('+800 1234 5678')).toEqual({ digits: '80012345678', key: '80012345678' });
  });

  it('gives both forms of an Argentine, Chilean or Mexican mobile the same key', () => {
    expect(normalisePhone('+54 9 11 4000 0000')?.key).toBe('541140000000');
    expect(normalisePhone('+54 11 4000 0000')?.key).toBe('541140000000');
    expect(normalisePhone('+56 9 1234 5678')?.key).toBe('5612345678');
    expect(normalisePhone('+56 1234 5678')?.key).toBe('5612345678');
    expect(normalisePhone('+52 1 55 5000 0000')?.key).toBe('525550000000');
    expect(normalisePhone('+52 55 5000 0000')?.key).toBe('525550000000');
    // The digit is dropped only at the length of the mobile form.
    expect(normalisePhone('+54 9 114 000 000')?.key).toBe('549114000000');
  });

  it('refuses what is not an international number', () => {
    for (const input of ['', 'abc', '+1 415 CALL NOW', '1234567', '1234567890123456', '0044 7911 123456', '+280 1234 5678', '+1-415-555-0100;ext=2']) {
      expect(normalisePhone(input), input).toBeUndefined();
    }
  });

  it('splits the calling code as libphonenumber-js parses "+digits", on any number', () => {
    const random = seeded(2026);
    for (let i = 0; i < 20_000; i++) {
      const length = 8 + Math.floor(random() * 8);
      let digits = String(1 + Math.floor(random() * 9));
      while (digits.length < length) digits += Math.floor(random() * 10);
      const parsed = parsePhoneNumberFromString(`+${digits}`);
      const normalised = normalisePhone(digits);
      expect(normalised === undefined, digits).toBe(parsed === undefined);
      if (parsed && normalised) expect(normalised.key.slice(0, parsed.countryCallingCode.length), digits).toBe(parsed.countryCallingCode);
    }
  });

  it('keys a stored number that does not parse by its digits', () => {
    expect(phoneKey('5491140000000')).toBe('541140000000');
    expect(phoneKey('2801234')).toBe('2801234');
  });
});
