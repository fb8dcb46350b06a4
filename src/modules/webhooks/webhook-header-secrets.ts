import { invalid } from '../../lib/domain-errors.ts';
import { SecretBoxError, type SecretBox } from '../../lib/secret-box.ts';

/**
 * What a read shows in place of a header value: `••••` and its last 4 characters (nothing more
 * when it has 4 or fewer). Header values are printable ASCII, so a value that begins with `•` can
 * only be a mask read back, never a value to send.
 */
export const HEADER_MASK = '••••';
const SHOWN_CHARACTERS = 4;

/** A webhook's custom headers as stored: values sealed, or plain text stored before sealing (`sealed` false). */
export interface StoredHeaders {
  headers: Record<string, string>;
  sealed: boolean;
}

export function maskHeaderValue(plain: string): string {
  return HEADER_MASK + (plain.length > SHOWN_CHARACTERS ? plain.slice(-SHOWN_CHARACTERS) : '');
}

const isMask = (value: string) => value.startsWith(HEADER_MASK);

/** A stored value in plain text; SecretBoxError when no key opens it. */
const openValue = (box: SecretBox, stored: StoredHeaders, value: string) => (stored.sealed ? box.open(value) : value);

/** The headers to send: values opened (SecretBoxError when no key opens one). */
export function openHeaders(box: SecretBox, stored: StoredHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(stored.headers).map(([name, value]) => [name, openValue(box, stored, value)]),
  );
}

/** The mask of a stored value; a value no key opens shows nothing of itself. */
function maskOf(box: SecretBox, stored: StoredHeaders, value: string): string {
  try {
    return maskHeaderValue(openValue(box, stored, value));
  } catch (err) {
    if (err instanceof SecretBoxError) return HEADER_MASK;
    throw err;
  }
}

/** The headers as every read shows them: names, and each value masked. */
export function maskedHeaders(box: SecretBox, stored: StoredHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(stored.headers).map(([name, value]) => [name, maskOf(box, stored, value)]));
}

/**
 * The stored form of the headers a create or an edit sends (the whole set; names already checked):
 * a value is sealed; a masked value keeps the value stored under that name (compared without case),
 * which must be the one the mask was read from, else the edit is refused rather than guessed at.
 * A header of `current` that `given` leaves out is dropped.
 */
export function sealGivenHeaders(
  box: SecretBox,
  given: Record<string, string>,
  current: StoredHeaders,
): Record<string, string> {
  const stored = new Map(Object.entries(current.headers).map(([name, value]) => [name.toLowerCase(), value]));
  const sealValue = (name: string, value: string): string => {
    if (!isMask(value)) return box.seal(value);
    const kept = stored.get(name.toLowerCase());
    const path = [{ path: `/headers/${name}` }];
    if (kept === undefined)
      throw invalid(`header ${name} has a masked value but no value is stored for it: send its value`, path);
    if (maskOf(box, current, kept) !== value)
      throw invalid(`header ${name}: the masked value is not the stored one's; send the value to replace it`, path);
    // Kept as stored (a value no key opens as well); the start-up pass moves it to the current key.
    return current.sealed ? kept : box.seal(kept);
  };
  return Object.fromEntries(Object.entries(given).map(([name, value]) => [name, sealValue(name, value)]));
}

/**
 * The headers sealed with the current key (values stored in the clear sealed, those sealed with a
 * fallback key sealed again): undefined when they are already; SecretBoxError when no key opens one.
 */
export function resealHeaders(box: SecretBox, stored: StoredHeaders): Record<string, string> | undefined {
  const entries = Object.entries(stored.headers);
  const sealed = entries.map(([name, value]) => [name, stored.sealed ? box.reseal(value) : box.seal(value)] as const);
  const changed = !stored.sealed || sealed.some(([, value], i) => value !== entries[i][1]);
  return changed ? Object.fromEntries(sealed) : undefined;
}
