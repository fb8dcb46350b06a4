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

describe('DATABASE_DIRECT_URL and DATABASE_NAMED_STATEMENTS', () => {
  const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env });
  const pooler = 'postgres://app@pgbouncer:6432/messaging';

  it('connects directly through DATABASE_URL unless told otherwise, and names statements by default', () => {
    expect(config({ DATABASE_URL: pooler })).toMatchObject({
      databaseUrl: pooler,
      databaseDirectUrl: pooler,
      databaseNamedStatements: true,
    });
    expect(
      config({
        DATABASE_URL: pooler,
        DATABASE_DIRECT_URL: 'postgres://app@db:5432/messaging',
        DATABASE_NAMED_STATEMENTS: 'false',
      }),
    ).toMatchObject({ databaseDirectUrl: 'postgres://app@db:5432/messaging', databaseNamedStatements: false });
  });

  it('refuses a direct URL without DATABASE_URL, and a named-statements value that is no boolean', () => {
    expect(() => config({ DATABASE_DIRECT_URL: 'postgres://app@db:5432/messaging' })).toThrow(
      /DATABASE_DIRECT_URL is for use with DATABASE_URL/,
    );
    expect(() => config({ DATABASE_URL: pooler, DATABASE_NAMED_STATEMENTS: 'sometimes' })).toThrow(ConfigError);
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

describe('the dashboard and TRUST_PROXY', () => {
  const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env });
  const DAY = 24 * 3600 * 1000;

  it('keeps sessions 7 days idle and 30 in all, invitations 7 days, and throttles sign-in 5/10 per account, 25/50 per address', () => {
    expect(config({}).dashboard).toEqual({
      sessionIdleMs: 7 * DAY,
      sessionMaxMs: 30 * DAY,
      invitationMs: 7 * DAY,
      signIn: {
        account: { delayAfter: 5, lockAfter: 10 },
        address: { delayAfter: 25, lockAfter: 50 },
        lockMs: 15 * 60 * 1000,
      },
    });
    expect(config({}).trustProxy).toBe(false);
  });

  it('reads each setting, never an idle time past the whole, and refuses a delay after the lock', () => {
    const dashboard = config({
      DASHBOARD_SESSION_IDLE_DAYS: '40',
      DASHBOARD_SESSION_MAX_DAYS: '20',
      DASHBOARD_INVITATION_DAYS: '2',
      DASHBOARD_SIGN_IN_ACCOUNT_DELAY_AFTER: '3',
      DASHBOARD_SIGN_IN_ACCOUNT_LOCK_AFTER: '3',
      DASHBOARD_SIGN_IN_LOCK_MINUTES: '60',
    }).dashboard;
    expect(dashboard).toMatchObject({
      sessionIdleMs: 20 * DAY,
      sessionMaxMs: 20 * DAY,
      invitationMs: 2 * DAY,
      signIn: { account: { delayAfter: 3, lockAfter: 3 }, lockMs: 3600 * 1000 },
    });
    expect(() => config({ DASHBOARD_SIGN_IN_ADDRESS_DELAY_AFTER: '60' })).toThrow(/must not exceed/);
    expect(() => config({ DASHBOARD_SESSION_IDLE_DAYS: '0' })).toThrow(ConfigError);
  });

  it('reads TRUST_PROXY as off, on, a number of proxies or a list of addresses', () => {
    expect(config({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(config({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(config({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(config({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16' }).trustProxy).toEqual(['10.0.0.1', '192.168.0.0/16']);
  });
});

describe('LLM_URL and its settings', () => {
  const llm = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env }).llm;

  it('is off without LLM_URL, and reads the model, the key, the timeout and the retries with their defaults', () => {
    expect(llm({})).toBeUndefined();
    expect(llm({ LLM_URL: 'https://api.openai.com/v1/' })).toEqual({
      url: 'https://api.openai.com/v1',
      apiKey: undefined,
      model: 'gpt-4o-mini',
      transcriptionModel: 'whisper-1',
      timeoutMs: 30_000,
      maxRetries: 2,
      concurrency: 32,
    });
    expect(
      llm({
        LLM_URL: 'http://127.0.0.1:11434/v1',
        LLM_API_KEY: 'sk-1',
        LLM_MODEL: 'llama3',
        LLM_TRANSCRIPTION_MODEL: 'whisper-large-v3',
        LLM_TIMEOUT_SECONDS: '5',
        LLM_MAX_RETRIES: '0',
        LLM_CONCURRENCY: '100',
      }),
    ).toEqual({
      url: 'http://127.0.0.1:11434/v1',
      apiKey: 'sk-1',
      model: 'llama3',
      transcriptionModel: 'whisper-large-v3',
      timeoutMs: 5000,
      maxRetries: 0,
      concurrency: 100,
    });
  });

  it('refuses a key or a model without LLM_URL, a URL that is not http(s), and bad numbers', () => {
    expect(() => llm({ LLM_API_KEY: 'sk-1' })).toThrow(/need LLM_URL/);
    expect(() => llm({ LLM_MODEL: 'x' })).toThrow(ConfigError);
    expect(() => llm({ LLM_TRANSCRIPTION_MODEL: 'whisper-1' })).toThrow(/need LLM_URL/);
    expect(() => llm({ LLM_URL: 'ftp://models.example' })).toThrow(/http or https/);
    expect(() => llm({ LLM_URL: 'models' })).toThrow(/absolute URL/);
    expect(() => llm({ LLM_URL: 'http://x.test', LLM_TIMEOUT_SECONDS: '0' })).toThrow(/positive integer/);
    expect(() => llm({ LLM_URL: 'http://x.test', LLM_MAX_RETRIES: '10' })).toThrow(/0 to 9/);
    expect(() => llm({ LLM_URL: 'http://x.test', LLM_CONCURRENCY: 'many' })).toThrow(/positive integer/);
  });
});

describe('AI_DAILY_TOKEN_BUDGET and AI_SENTIMENT_QUIET_MINUTES', () => {
  const ai = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env }).ai;

  it('default to no budget and a day of quiet, and read whole tokens and minutes with fractions', () => {
    expect(ai({})).toEqual({ dailyTokenBudget: 0, sentimentQuietMinutes: 1440 });
    expect(ai({ AI_DAILY_TOKEN_BUDGET: '250000', AI_SENTIMENT_QUIET_MINUTES: '0.5' })).toEqual({
      dailyTokenBudget: 250_000,
      sentimentQuietMinutes: 0.5,
    });
    expect(ai({ AI_DAILY_TOKEN_BUDGET: '0', AI_SENTIMENT_QUIET_MINUTES: '0' })).toEqual({
      dailyTokenBudget: 0,
      sentimentQuietMinutes: 0,
    });
  });

  it('refuse what is not a count of tokens or of minutes', () => {
    for (const value of ['-1', '1.5', 'lots', '1e6', '99999999999999999999'])
      expect(() => ai({ AI_DAILY_TOKEN_BUDGET: value }), value).toThrow(/AI_DAILY_TOKEN_BUDGET/);
    for (const value of ['-1', 'soon', '1e3', '525601', '.5'])
      expect(() => ai({ AI_SENTIMENT_QUIET_MINUTES: value }), value).toThrow(/AI_SENTIMENT_QUIET_MINUTES/);
  });
});

describe('S3_BUCKET and its settings', () => {
  const s3 = (env: Record<string, string>) => loadConfig({ DATA_DIR: 'memory://', SECRET_KEY: KEY, ...env }).s3;

  it('is off without S3_BUCKET, and reads the endpoint, region, keys, addressing and prefix with their defaults', () => {
    expect(s3({})).toBeUndefined();
    expect(s3({ S3_BUCKET: 'media' })).toEqual({
      bucket: 'media',
      endpoint: undefined,
      region: 'us-east-1',
      credentials: undefined,
      forcePathStyle: false,
      keyPrefix: '',
    });
    expect(
      s3({
        S3_BUCKET: 'chat-media',
        S3_ENDPOINT: 'http://127.0.0.1:9000/',
        S3_REGION: 'garage',
        S3_ACCESS_KEY_ID: 'GK31c2f218a2e44f485b94239e',
        S3_SECRET_ACCESS_KEY: 'b892c0665f0ada8a4755dae98baa3b133590e11dae3bcc1f9d769d67f16c3835',
        S3_FORCE_PATH_STYLE: 'true',
        S3_KEY_PREFIX: '/prod/eu/',
      }),
    ).toEqual({
      bucket: 'chat-media',
      endpoint: 'http://127.0.0.1:9000',
      region: 'garage',
      credentials: {
        accessKeyId: 'GK31c2f218a2e44f485b94239e',
        secretAccessKey: 'b892c0665f0ada8a4755dae98baa3b133590e11dae3bcc1f9d769d67f16c3835',
      },
      forcePathStyle: true,
      keyPrefix: 'prod/eu',
    });
  });

  it('refuses settings without S3_BUCKET, half a key pair, and bad names, without echoing the secret', () => {
    expect(() => s3({ S3_ENDPOINT: 'http://127.0.0.1:9000', S3_KEY_PREFIX: 'p' })).toThrow(
      'S3_ENDPOINT, S3_KEY_PREFIX need S3_BUCKET',
    );
    expect(() => s3({ S3_BUCKET: 'media', S3_ACCESS_KEY_ID: 'AKIA' })).toThrow(/go together/);
    expect(() => s3({ S3_BUCKET: 'media', S3_SECRET_ACCESS_KEY: 'very-secret' })).toThrow(
      /^S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together$/,
    );
    expect(() => s3({ S3_BUCKET: 'media/x' })).toThrow(/S3_BUCKET must be a bucket name/);
    expect(() => s3({ S3_BUCKET: 'media', S3_ENDPOINT: 'minio:9000' })).toThrow(/S3_ENDPOINT must be/);
    expect(() => s3({ S3_BUCKET: 'media', S3_FORCE_PATH_STYLE: 'sometimes' })).toThrow(/true or false/);
    for (const prefix of ['a/../b', 'a//b', 'a b', 'a.b'])
      expect(() => s3({ S3_BUCKET: 'media', S3_KEY_PREFIX: prefix }), prefix).toThrow(/S3_KEY_PREFIX must be/);
  });
});
