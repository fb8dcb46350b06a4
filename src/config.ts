import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { SecretKeys } from './lib/secret-keys.ts';
import { withDefaultUser } from './db/connection-string.ts';

/** Typed service configuration; the only place that reads process.env. */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  /**
   * Straight to PostgreSQL, for what needs a session of its own (LISTEN, the worker session's lock,
   * the migrations) when DATABASE_URL is a pooler in transaction mode; DATABASE_URL when unset.
   */
  databaseDirectUrl: string | undefined;
  /** Whether hot statements are prepared under a name on each pooled connection (off behind most poolers). */
  databaseNamedStatements: boolean;
  dataDir: string;
  publicUrl: string;
  adminToken: string | undefined;
  /** SECRET_KEY first, then SECRET_KEY_FALLBACKS (lib/secret-keys.ts). */
  secretKeys: SecretKeys;
  allowPrivateWebhookTargets: boolean;
  logLevel: string;
  seedDemo: boolean;
  /** Redis for counters shared by every server process (rate limits); unset = counters in the database. */
  redisUrl: string | undefined;
  /** Requests per window per business on GET /events. */
  rateLimitEventsPerWindow: number;
  /** Requests per window per business shared by GET /messages and GET /contacts/:uuid/timeline. */
  rateLimitExportsPerWindow: number;
  /** Length of the fixed rate-limit window, seconds (the contract's limits are per minute). */
  rateLimitWindowSeconds: number;
  /** Where search items' embeddings are computed (an OpenAI-compatible API); unset = not computed. */
  embeddings: EmbeddingsConfig | undefined;
  /** The chat-completions API AI agents answer with (OpenAI-compatible); unset = agents do not answer. */
  llm: LlmConfig | undefined;
  /** The AI agents' daily token budget and when a quiet conversation's sentiment is analysed. */
  ai: AiConfig;
  /**
   * Whose X-Forwarded-For names the client (sign-in throttling, logs): none, every proxy, the nearest
   * `n` proxies, or proxies at these addresses or CIDR ranges.
   */
  trustProxy: boolean | number | string[];
  /** Dashboard sign-in: sessions, invitations, throttling. */
  dashboard: DashboardConfig;
  /** Polled channels (mailboxes): how often their list is read again, and the poll of a server without IDLE. */
  poller: PollerConfig;
  /** Media files in an S3-compatible bucket (S3_BUCKET and its settings); unset = under `DATA_DIR/media`. */
  s3: S3StorageConfig | undefined;
}

/** An S3-compatible bucket (AWS, MinIO, R2, Garage) that holds the media files of every process. */
export interface S3StorageConfig {
  bucket: string;
  /** The API's base URL (MinIO, R2, Garage); unset = AWS's own for `region`. */
  endpoint: string | undefined;
  region: string;
  /** Unset: the SDK's own chain (AWS_* variables, shared files, the instance's or task's role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Addresses `endpoint/bucket/key` rather than `bucket.endpoint/key` (most self-hosted servers need it). */
  forcePathStyle: boolean;
  /** Put before every key, without slashes at its ends ('' = none): several deployments can share a bucket. */
  keyPrefix: string;
}

export interface PollerConfig {
  /** How often the channels read by polling are listed again (new, deleted, rotated) and their leases renewed. */
  refreshMs: number;
  /**
   * Milliseconds between two polls of a mailbox whose server cannot tell of new mail, and between two
   * looks of a linked channel at what the operator asked; the kind's own when unset.
   */
  intervalMs: number | undefined;
}

/** Failures of one key (an account's email, or a client address) before sign-in slows, then refuses. */
export interface SignInLimit {
  /** From this many failures on, each attempt waits 1 s after the last failure, doubling with each failure. */
  delayAfter: number;
  /** At this many failures, attempts are refused for `lockMs`. */
  lockAfter: number;
}

export interface DashboardConfig {
  /** A session unused this long ends. */
  sessionIdleMs: number;
  /** A session ends this long after sign-in, however used. */
  sessionMaxMs: number;
  /** How long an invitation link stays valid. */
  invitationMs: number;
  signIn: { account: SignInLimit; address: SignInLimit; lockMs: number };
}

export interface EmbeddingsConfig {
  /** Base URL of the API; POST {url}/embeddings. */
  url: string;
  apiKey: string | undefined;
  model: string;
}

export interface LlmConfig {
  /** Base URL of the API; POST {url}/chat/completions. */
  url: string;
  apiKey: string | undefined;
  /** The model of agents without their own. */
  model: string;
  /** The speech-to-text model recordings of calls are transcribed with (LLM_TRANSCRIPTION_MODEL). */
  transcriptionModel: string;
  /** How long one call may take, retries apart. */
  timeoutMs: number;
  /** Tries after the first on a timeout, a lost connection, 429 or 5xx. */
  maxRetries: number;
  /** Runs one process has in hand at once (most of a run is waiting for the model). */
  concurrency: number;
}

export interface AiConfig {
  /** Tokens (in and out) a business's agents may use per UTC day unless the business sets its own; 0: no bound. */
  dailyTokenBudget: number;
  /** Minutes without messages after which a conversation's sentiment is analysed; 0: only on resolution. */
  sentimentQuietMinutes: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function positiveInt(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new ConfigError(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

function port(env: Env): number {
  const raw = env.PORT || '3000';
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535)
    throw new ConfigError(`PORT must be a port number, got "${raw}"`);
  return value;
}

/** pino's levels: another value would stop the service only once it had opened its database. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(env: Env): string {
  const level = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(level))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  return level;
}

/**
 * The secret that signs cursors and media URLs. On the embedded engine it is generated once and kept
 * in DATA_DIR so signed addresses survive restarts; with PostgreSQL several processes must share it,
 * so it has to be given.
 */
function secretKey(env: Env, dataDir: string, databaseUrl: string | undefined): string {
  if (env.SECRET_KEY) {
    if (env.SECRET_KEY.length < 32) throw new ConfigError('SECRET_KEY must be at least 32 characters');
    return env.SECRET_KEY;
  }
  if (databaseUrl) throw new ConfigError('SECRET_KEY is required when DATABASE_URL is set');
  if (dataDir === 'memory://') return randomBytes(32).toString('base64url');
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const generated = randomBytes(32).toString('base64url');
  writeFileSync(file, generated + '\n', { mode: 0o600 });
  return generated;
}

/**
 * SECRET_KEY, then the earlier keys still accepted while a rotation completes (SECRET_KEY_FALLBACKS,
 * comma-separated): what they signed still verifies, and what they sealed still opens and is sealed
 * again with SECRET_KEY at start.
 */
function secretKeys(env: Env, dataDir: string, databaseUrl: string | undefined): SecretKeys {
  const current = secretKey(env, dataDir, databaseUrl);
  const fallbacks = (env.SECRET_KEY_FALLBACKS ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '');
  for (const key of fallbacks) {
    if (key.length < 32) throw new ConfigError('each key of SECRET_KEY_FALLBACKS must be at least 32 characters');
  }
  return [current, ...new Set(fallbacks.filter((key) => key !== current))];
}

/** EMBEDDINGS_URL (with EMBEDDINGS_API_KEY and EMBEDDINGS_MODEL): an OpenAI-compatible embeddings API. */
function embeddings(env: Env): EmbeddingsConfig | undefined {
  const raw = env.EMBEDDINGS_URL;
  if (!raw) {
    if (env.EMBEDDINGS_API_KEY || env.EMBEDDINGS_MODEL)
      throw new ConfigError('EMBEDDINGS_API_KEY and EMBEDDINGS_MODEL need EMBEDDINGS_URL');
    return undefined;
  }
  return {
    url: httpUrl('EMBEDDINGS_URL', raw),
    apiKey: env.EMBEDDINGS_API_KEY || undefined,
    model: env.EMBEDDINGS_MODEL || 'text-embedding-3-small',
  };
}

/** An absolute http(s) URL from `name`, without its trailing slashes. */
function httpUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ConfigError(`${name} must be http or https, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

/**
 * LLM_URL (with LLM_API_KEY, LLM_MODEL, LLM_TRANSCRIPTION_MODEL, LLM_TIMEOUT_SECONDS, LLM_MAX_RETRIES,
 * LLM_CONCURRENCY): an OpenAI-compatible chat API, and its speech-to-text for calls' recordings.
 */
function llm(env: Env): LlmConfig | undefined {
  const raw = env.LLM_URL;
  if (!raw) {
    if (env.LLM_API_KEY || env.LLM_MODEL || env.LLM_TRANSCRIPTION_MODEL)
      throw new ConfigError('LLM_API_KEY, LLM_MODEL and LLM_TRANSCRIPTION_MODEL need LLM_URL');
    return undefined;
  }
  const retries = env.LLM_MAX_RETRIES;
  if (retries !== undefined && retries !== '' && !/^[0-9]$/.test(retries))
    throw new ConfigError(`LLM_MAX_RETRIES must be 0 to 9, got "${retries}"`);
  return {
    url: httpUrl('LLM_URL', raw),
    apiKey: env.LLM_API_KEY || undefined,
    model: env.LLM_MODEL || 'gpt-4o-mini',
    transcriptionModel: env.LLM_TRANSCRIPTION_MODEL || 'whisper-1',
    timeoutMs: positiveInt(env, 'LLM_TIMEOUT_SECONDS', 30) * 1000,
    maxRetries: retries === undefined || retries === '' ? 2 : Number(retries),
    concurrency: positiveInt(env, 'LLM_CONCURRENCY', 32),
  };
}

const S3_SETTINGS = [
  'S3_ENDPOINT',
  'S3_REGION',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_FORCE_PATH_STYLE',
  'S3_KEY_PREFIX',
];

/**
 * S3_BUCKET (with S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE,
 * S3_KEY_PREFIX): media files in an S3-compatible bucket. The messages never name the secret.
 */
function s3(env: Env): S3StorageConfig | undefined {
  const bucket = env.S3_BUCKET;
  if (!bucket) {
    const stray = S3_SETTINGS.filter((name) => env[name]);
    if (stray.length > 0) throw new ConfigError(`${stray.join(', ')} need S3_BUCKET`);
    return undefined;
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/.test(bucket))
    throw new ConfigError(`S3_BUCKET must be a bucket name (letters, digits, '.', '-', '_'), got "${bucket}"`);
  const accessKeyId = env.S3_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY || undefined;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined))
    throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together');
  const keyPrefix = (env.S3_KEY_PREFIX ?? '').replace(/^\/+|\/+$/g, '');
  if (keyPrefix !== '' && !/^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/.test(keyPrefix))
    throw new ConfigError(
      `S3_KEY_PREFIX must be path segments of letters, digits, '-' and '_', got "${env.S3_KEY_PREFIX}"`,
    );
  return {
    bucket,
    endpoint: env.S3_ENDPOINT ? httpUrl('S3_ENDPOINT', env.S3_ENDPOINT) : undefined,
    region: env.S3_REGION || 'us-east-1',
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
    forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', false),
    keyPrefix,
  };
}

/** A number of minutes, 0 or more; fractions are allowed (tests wait seconds, not minutes). */
function minutes(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(raw) || !Number.isFinite(value) || value > 525_600)
    throw new ConfigError(`${name} must be a number of minutes from 0 to 525600, got "${raw}"`);
  return value;
}

/** AI_DAILY_TOKEN_BUDGET and AI_SENTIMENT_QUIET_MINUTES. */
function ai(env: Env): AiConfig {
  const raw = env.AI_DAILY_TOKEN_BUDGET;
  let dailyTokenBudget = 0;
  if (raw !== undefined && raw !== '') {
    dailyTokenBudget = Number(raw);
    if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(dailyTokenBudget))
      throw new ConfigError(`AI_DAILY_TOKEN_BUDGET must be a whole number of tokens, 0 or more, got "${raw}"`);
  }
  return { dailyTokenBudget, sentimentQuietMinutes: minutes(env, 'AI_SENTIMENT_QUIET_MINUTES', 1440) };
}

/** TRUST_PROXY: unset or false = none; true = every proxy; a number of proxies; else addresses or CIDRs. */
function trustProxy(env: Env): boolean | number | string[] {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^[0-9]+$/.test(raw)) return Number(raw);
  return raw
    .split(',')
    .map((address) => address.trim())
    .filter((address) => address !== '');
}

const DAY_MS = 24 * 60 * 60 * 1000;

function signInLimit(env: Env, kind: 'ACCOUNT' | 'ADDRESS', delay: number, lock: number): SignInLimit {
  const delayAfter = positiveInt(env, `DASHBOARD_SIGN_IN_${kind}_DELAY_AFTER`, delay);
  const lockAfter = positiveInt(env, `DASHBOARD_SIGN_IN_${kind}_LOCK_AFTER`, lock);
  if (delayAfter > lockAfter)
    throw new ConfigError(`DASHBOARD_SIGN_IN_${kind}_DELAY_AFTER must not exceed DASHBOARD_SIGN_IN_${kind}_LOCK_AFTER`);
  return { delayAfter, lockAfter };
}

function dashboard(env: Env): DashboardConfig {
  const sessionIdleMs = positiveInt(env, 'DASHBOARD_SESSION_IDLE_DAYS', 7) * DAY_MS;
  const sessionMaxMs = positiveInt(env, 'DASHBOARD_SESSION_MAX_DAYS', 30) * DAY_MS;
  return {
    sessionIdleMs: Math.min(sessionIdleMs, sessionMaxMs),
    sessionMaxMs,
    invitationMs: positiveInt(env, 'DASHBOARD_INVITATION_DAYS', 7) * DAY_MS,
    signIn: {
      account: signInLimit(env, 'ACCOUNT', 5, 10),
      address: signInLimit(env, 'ADDRESS', 25, 50),
      lockMs: positiveInt(env, 'DASHBOARD_SIGN_IN_LOCK_MINUTES', 15) * 60 * 1000,
    },
  };
}

export function loadConfig(env: Env = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const listenPort = port(env);
  const databaseUrl = env.DATABASE_URL ? withDefaultUser(env.DATABASE_URL) : undefined;
  if (env.DATABASE_DIRECT_URL && !databaseUrl)
    throw new ConfigError('DATABASE_DIRECT_URL is for use with DATABASE_URL, which is not set');
  const databaseDirectUrl = env.DATABASE_DIRECT_URL ? withDefaultUser(env.DATABASE_DIRECT_URL) : databaseUrl;
  const dataDir = env.DATA_DIR || './data';
  const adminToken = env.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16)
    throw new ConfigError('ADMIN_TOKEN must be at least 16 characters');
  // A token of blanks starts an operator API that no Authorization header can reach.
  if (adminToken !== undefined && /\s/.test(adminToken))
    throw new ConfigError('ADMIN_TOKEN must not contain spaces or other whitespace');
  const publicUrl = (env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${listenPort}`).replace(
    /\/+$/,
    '',
  );
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an absolute URL, got "${publicUrl}"`);
  }
  return {
    port: listenPort,
    host,
    databaseUrl,
    databaseDirectUrl,
    databaseNamedStatements: bool(env, 'DATABASE_NAMED_STATEMENTS', true),
    dataDir,
    publicUrl,
    adminToken,
    secretKeys: secretKeys(env, dataDir, databaseUrl),
    allowPrivateWebhookTargets: bool(env, 'ALLOW_PRIVATE_WEBHOOK_TARGETS', false),
    logLevel: logLevel(env),
    seedDemo: bool(env, 'SEED_DEMO', true),
    redisUrl: env.REDIS_URL || undefined,
    rateLimitEventsPerWindow: positiveInt(env, 'RATE_LIMIT_EVENTS_PER_MINUTE', 120),
    poller: {
      refreshMs: positiveInt(env, 'POLLER_REFRESH_MS', 15_000),
      intervalMs: env.POLLER_INTERVAL_MS === undefined ? undefined : positiveInt(env, 'POLLER_INTERVAL_MS', 30_000),
    },
    rateLimitExportsPerWindow: positiveInt(env, 'RATE_LIMIT_EXPORTS_PER_MINUTE', 120),
    rateLimitWindowSeconds: positiveInt(env, 'RATE_LIMIT_WINDOW_SECONDS', 60),
    embeddings: embeddings(env),
    llm: llm(env),
    ai: ai(env),
    trustProxy: trustProxy(env),
    dashboard: dashboard(env),
    s3: s3(env),
  };
}
