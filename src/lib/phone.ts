import { parsePhoneNumberFromString } from 'libphonenumber-js';

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
 * Normalises a phone number given with its country code ("+56 9 1234 5678", "56912345678").
 * libphonenumber-js splits the country calling code; numbers in a variant form (a Mexican 521...)
 * are not "possible" numbers to it, so any length E.164 allows is accepted. Undefined when the input
 * is not a phone number.
 */
export function normalisePhone(input: string): NormalisedPhone | undefined {
  let known = recent.get(input);
  if (known === undefined) {
    if (recent.size >= RECENT_MAX) recent.clear();
    known = parse(input) ?? null;
    recent.set(input, known);
  }
  return known ?? undefined;
}

/**
 * Numbers normalised lately. An inbound batch and a send batch normalise each sender several times
 * (lock, lookup, new contact), and busy senders write again and again: parsing was 5% of the
 * service's CPU while storing 1 000 inbound messages a second. Bounded: emptied when full (simpler
 * than an LRU, and a refill costs only the parses).
 */
const recent = new Map<string, NormalisedPhone | null>();
const RECENT_MAX = 10_000;

function parse(input: string): NormalisedPhone | undefined {
  const trimmed = input.trim();
  if (!/^\+?[\d\s().-]+$/.test(trimmed)) return undefined;
  const digits = trimmed.replace(/\D/g, '');
  if (digits.length < 8 || digits.length > 15 || digits.startsWith('0')) return undefined;
  const parsed = parsePhoneNumberFromString(`+${digits}`);
  if (!parsed) return undefined;
  const code = parsed.countryCallingCode;
  let national = digits.slice(code.length);
  const variant = optionalDigit[code];
  if (variant && national.length === variant.length && national.startsWith(variant.digit)) national = national.slice(1);
  return { digits, key: code + national };
}

/** The lookup key of a stored number, or the digits themselves when they do not parse. */
export function phoneKey(digits: string): string {
  return normalisePhone(digits)?.key ?? digits;
}
