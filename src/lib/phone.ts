import { parsePhoneNumberFromString } from 'libphonenumber-js';
import metadata from 'libphonenumber-js/min/metadata';

/** A phone number as stored: digits with country code, and the key lookups match on. */
export interface NormalisedPhone {
  digits: string;
  key: string;
}

/**
 * Digits a country writes in some forms of a mobile number and not in others: Argentina's mobile 9
 * (549... and 54...), Chile's mobile 9 (569... and 56...) and Mexico's legacy mobile 1 (521... and
 * 52...). The key drops that digit, so either form finds the other with one indexed equality.
 */
const optionalDigit: Record<string, { digit: string; length: number }> = {
  '54': { digit: '9', length: 11 },
  '56': { digit: '9', length: 9 },
  '52': { digit: '1', length: 11 },
};

/**
 * The country calling codes of libphonenumber-js's metadata: those of countries and the
 * non-geographic ones (800, 808, 870, 878, 881–883, 888, 979).
 */
const callingCodes = new Set([...Object.keys(metadata.country_calling_codes), ...Object.keys(metadata.nonGeographic)]);

/**
 * The calling code that starts `digits` (an international number without its +). Calling codes
 * are a prefix code of one to three digits, so at most one prefix is a code. This is the split
 * that parsePhoneNumberFromString makes of a "+digits" number, and all the lookups need of it
 * (test/lib/phone.test.ts checks every four-digit start against the parser). The parser costs
 * about 7 µs a number, this 0.2 µs.
 */
function callingCodeOf(digits: string): string | undefined {
  for (let length = 1; length <= 3; length++) {
    const prefix = digits.slice(0, length);
    if (callingCodes.has(prefix)) return prefix;
  }
  return undefined;
}

/**
 * Normalises a phone number given with its country code ("+56 9 1234 5678", "56912345678"). Any
 * length E.164 allows is accepted from eight digits: numbers in a variant form (a Mexican 521...)
 * are not "possible" numbers to libphonenumber-js. Seven digits are a number in a few places only
 * (Niue's +683 4002, Tokelau's +690 3010) and a typo everywhere else, so they are taken when
 * libphonenumber-js finds them valid. Undefined when the input is not a phone number.
 */
export function normalisePhone(input: string): NormalisedPhone | undefined {
  const trimmed = input.trim();
  if (!/^\+?[\d\s().-]+$/.test(trimmed)) return undefined;
  const digits = trimmed.replace(/\D/g, '');
  if (digits.length < 7 || digits.length > 15 || digits.startsWith('0')) return undefined;
  if (digits.length === 7 && !parsePhoneNumberFromString(`+${digits}`)?.isValid()) return undefined;
  const code = callingCodeOf(digits);
  if (code === undefined) return undefined;
  let national = digits.slice(code.length);
  const variant = optionalDigit[code];
  if (variant && national.length === variant.length && national.startsWith(variant.digit)) national = national.slice(1);
  return { digits, key: code + national };
}

/** The lookup key of a stored number, or the digits themselves when they do not parse. */
export function phoneKey(digits: string): string {
  return normalisePhone(digits)?.key ?? digits;
}
