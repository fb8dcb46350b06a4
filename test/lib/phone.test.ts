import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { describe, expect, it } from 'vitest';
import { normalisePhone, phoneKey } from '../../src/lib/phone.ts';

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
    for (const input of [
      '',
      'abc',
      '+1 415 CALL NOW',
      '1234567',
      '1234567890123456',
      '0044 7911 123456',
      '+280 1234 5678',
      '+1-415-555-0100;ext=2',
    ]) {
      expect(normalisePhone(input), input).toBeUndefined();
    }
  });

  it('takes a seven-digit number only where one is valid', () => {
    expect(normalisePhone('+683 4002')).toEqual({ digits: '6834002', key: '6834002' });
    expect(normalisePhone('6903010')).toEqual({ digits: '6903010', key: '6903010' });
    for (const input of ['1234567', '+44 12345', '+351 2345']) expect(normalisePhone(input), input).toBeUndefined();
    // Where one is taken, its calling code is split as the parser splits it.
    for (let start = 1000; start <= 9999; start++) {
      const digits = `${start}712`;
      const normalised = normalisePhone(digits);
      const code = parsePhoneNumberFromString(`+${digits}`)?.countryCallingCode;
      if (normalised) expect(normalised.key.slice(0, code?.length), digits).toBe(code);
    }
  });

  it('splits the calling code as libphonenumber-js parses "+digits", for every four-digit start', () => {
    // Calling codes have one to three digits, so the first four digits decide the split; each start
    // is tried at the shortest, a middle and the longest length.
    for (let start = 1000; start <= 9999; start++) {
      for (const length of [8, 12, 15]) {
        const digits = `${start}${'71234567890'.slice(0, length - 4)}`;
        const parsed = parsePhoneNumberFromString(`+${digits}`);
        const normalised = normalisePhone(digits);
        expect(normalised === undefined, digits).toBe(parsed === undefined);
        if (parsed && normalised)
          expect(normalised.key.slice(0, parsed.countryCallingCode.length), digits).toBe(parsed.countryCallingCode);
      }
    }
  });

  it('keys a stored number, or by its digits when they do not parse', () => {
    expect(phoneKey('5491140000000')).toBe('541140000000');
    expect(phoneKey('2801234')).toBe('2801234');
  });
});
