import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

const KEY = 'the-current-secret-key-0123456789-0123456789';
const OLD = 'an-earlier-secret-key-0123456789-0123456789';
const OLDER = 'an-even-earlier-secret-key-0123456789-01234';

describe('SECRET_KEY and SECRET_KEY_FALLBACKS', () => {
  const keys = (env: Record<string, string>) =>
    loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env }).secretKeys;

  it('puts SECRET_KEY first, then the fallbacks in their order, trimmed, each once, without SECRET_KEY', () => {
    expect(keys({})).toEqual([KEY]);
    expect(keys({ SECRET_KEY_FALLBACKS: '' })).toEqual([KEY]);
    expect(keys({ SECRET_KEY_FALLBACKS: `${OLD}, ${OLDER} ,${OLD},${KEY},` })).toEqual([KEY, OLD, OLDER]);
  });

  it('refuses a fallback or a key shorter than 32 characters, and PostgreSQL without SECRET_KEY', () => {
    expect(() => keys({ SECRET_KEY_FALLBACKS: `${OLD},short` })).toThrow(ConfigError);
    expect(() => keys({ SECRET_KEY: 'short' })).toThrow(/at least 32/);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://127.0.0.1/db', SECRET_KEY_FALLBACKS: OLD })).toThrow(
      /SECRET_KEY is required/,
    );
  });

  it('keeps the generated key of the embedded default current, with the fallbacks after it', () => {
    const [current, ...fallbacks] = loadConfig({ DATA_DIR: 'memory://', SECRET_KEY_FALLBACKS: OLD }).secretKeys;
    expect(current).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fallbacks).toEqual([OLD]);
  });
});

describe('PORT and LOG_LEVEL', () => {
  const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env });

  it('reads an empty PORT as unset, like every other variable', () => {
    expect(config({ PORT: '' })).toMatchObject({ port: 3000, publicUrl: 'http://127.0.0.1:3000' });
    expect(config({ PORT: '0' }).port).toBe(0);
    expect(() => config({ PORT: '70000' })).toThrow(ConfigError);
  });

  it("takes pino's levels only", () => {
    expect(config({}).logLevel).toBe('info');
    expect(config({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(() => config({ LOG_LEVEL: 'verbose' })).toThrow(/LOG_LEVEL must be one of/);
  });
});

describe('ADMIN_TOKEN', () => {
  const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env });

  it('refuses a token of blanks or one with whitespace inside, which no Bearer header can carry', () => {
    expect(() => config({ ADMIN_TOKEN: ' '.repeat(16) })).toThrow(/ADMIN_TOKEN must not contain/);
    expect(() => config({ ADMIN_TOKEN: '\t'.repeat(20) })).toThrow(ConfigError);
    expect(() => config({ ADMIN_TOKEN: 'an admin token with spaces' })).toThrow(ConfigError);
    expect(config({ ADMIN_TOKEN: 'an-admin-token-0123456789' }).adminToken).toBe('an-admin-token-0123456789');
    expect(config({ ADMIN_TOKEN: '' }).adminToken).toBeUndefined();
  });
});
