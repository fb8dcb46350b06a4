import { describe, expect, it } from 'vitest';
import { SecretBox, SecretBoxError } from '../../src/lib/secret-box.ts';

const KEY = 'a-secret-key-of-at-least-thirty-two-characters';
const OLD_KEY = 'the-key-before-the-rotation-of-thirty-two-characters';

describe('SecretBox', () => {
  const box = new SecretBox([KEY], 'test');

  it('seals a value so that it opens to itself, with a new IV each time', () => {
    const plain = 'EAAG token ✓ with "quotes"';
    const a = box.seal(plain);
    const b = box.seal(plain);
    expect(a).toMatch(/^sb1\.[A-Za-z0-9_-]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('EAAG');
    expect(box.open(a)).toBe(plain);
    expect(box.open(box.seal(''))).toBe('');
  });

  it('reads a value stored before sealing as it is', () => {
    expect(box.open('plain-token')).toBe('plain-token');
    expect(box.isCurrent('plain-token')).toBe(false);
    const sealed = box.reseal('plain-token');
    expect(box.isCurrent(sealed)).toBe(true);
    expect(box.open(sealed)).toBe('plain-token');
  });

  it('refuses a changed value, a cut one, and another key or purpose', () => {
    const sealed = box.seal('secret');
    const at = sealed.length - 8; // within the ciphertext (the last character may be padding bits only)
    const changed = sealed.slice(0, at) + (sealed[at] === 'A' ? 'B' : 'A') + sealed.slice(at + 1);
    expect(() => box.open(changed)).toThrow(SecretBoxError);
    expect(() => box.open('sb1.AAAA')).toThrow(SecretBoxError);
    expect(() => new SecretBox([`${KEY}!`], 'test').open(sealed)).toThrow(/SECRET_KEY/);
    expect(() => new SecretBox([KEY], 'other').open(sealed)).toThrow(SecretBoxError);
  });

  it('digests a value the same way every time, and differently under another key', () => {
    expect(box.digest('token')).toBe(box.digest('token'));
    expect(box.digest('token')).not.toBe(box.digest('token2'));
    expect(new SecretBox([`${KEY}!`], 'test').digest('token')).not.toBe(box.digest('token'));
    expect(box.digest('token')).not.toContain('token');
  });

  it('opens values sealed with a fallback key, and seals them again with the current one', () => {
    const before = new SecretBox([OLD_KEY], 'test').seal('token');
    const rotated = new SecretBox([KEY, OLD_KEY], 'test');
    expect(rotated.open(before)).toBe('token');
    expect(rotated.isCurrent(before)).toBe(false);
    const resealed = rotated.reseal(before);
    expect(resealed).not.toBe(before);
    expect(rotated.isCurrent(resealed)).toBe(true);
    expect(rotated.reseal(resealed)).toBe(resealed);
    // Without the fallback the old value no longer opens; the new one opens with SECRET_KEY alone.
    expect(() => box.open(before)).toThrow(SecretBoxError);
    expect(box.open(resealed)).toBe('token');
    expect(() => rotated.reseal(new SecretBox([`${KEY}!`], 'test').seal('token'))).toThrow(SecretBoxError);
  });

  it('digests under every key, the current one first', () => {
    const rotated = new SecretBox([KEY, OLD_KEY], 'test');
    expect(rotated.digests('token')).toEqual([box.digest('token'), new SecretBox([OLD_KEY], 'test').digest('token')]);
    expect(rotated.digest('token')).toBe(box.digest('token'));
  });
});
