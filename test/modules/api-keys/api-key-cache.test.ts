import { describe, expect, it } from 'vitest';
import { ApiKeyCache } from '../../../src/modules/api-keys/api-key-cache.ts';

describe('ApiKeyCache', () => {
  it('caches what a lookup read, for its time to live', () => {
    let now = 0;
    const cache = new ApiKeyCache({ trusted: true }, 1_000, 10, () => now);
    cache.set('h', 'business', cache.removals());
    expect(cache.get('h')).toBe('business');
    now = 1_000;
    expect(cache.get('h')).toBeUndefined();
  });

  it('does not cache what a lookup read before a revocation answered after it', () => {
    const cache = new ApiKeyCache({ trusted: true });
    const readAt = cache.removals(); // the lookup reads the key as valid...
    cache.delete('h'); // ...the revocation commits and removes it...
    cache.set('h', 'business', readAt); // ...and the lookup's answer arrives
    expect(cache.get('h')).toBeUndefined();
    cache.set('h', 'business', cache.removals());
    expect(cache.get('h')).toBe('business');
  });

  it('caches nothing while revocations may go unheard, nor what was read before', () => {
    const cache = new ApiKeyCache({ trusted: true });
    cache.set('a', 'business', cache.removals());
    const readAt = cache.removals();
    cache.setTrusted(false);
    expect(cache.get('a')).toBeUndefined();
    cache.set('b', 'business', cache.removals());
    expect(cache.get('b')).toBeUndefined();
    cache.setTrusted(true);
    cache.set('c', 'business', readAt);
    expect(cache.get('c')).toBeUndefined();
  });
});
