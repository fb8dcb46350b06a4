import type { CredentialStore } from '../credential-store.ts';
import { ProviderError } from '../provider-error.ts';
import type { TikTokClient } from './tiktok.client.ts';
import type { TikTokConfig } from './tiktok.config.ts';
import { refreshRefused } from './tiktok.errors.ts';

/** A token expiring within this is renewed before a call: the call must not outlive it. */
export const RENEW_BEFORE_MS = 5 * 60_000;

/** TikTok's OAuth renewal of a business account's tokens. */
const REFRESH_PATH = '/tt_user/oauth2/refresh_token/';

interface Tokens {
  access: string;
  refresh: string;
  /** Milliseconds since the epoch; null when unknown (renewed only once TikTok says it expired). */
  expiresAt: number | null;
}

const expiryOf = (iso: unknown): number | null => {
  const ms = typeof iso === 'string' ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) ? ms : null;
};

const tokensOf = (config: Partial<TikTokConfig>): Tokens | null =>
  typeof config.access_token === 'string' && typeof config.refresh_token === 'string'
    ? {
        access: config.access_token,
        refresh: config.refresh_token,
        expiresAt: expiryOf(config.access_token_expires_at),
      }
    : null;

/**
 * The channel's OAuth tokens: the access token every call carries, renewed with the refresh token
 * when it expires (or is about to), and the renewed pair stored sealed through the channel's
 * CredentialStore. Concurrent calls share one renewal; before renewing, the stored tokens are read
 * again, since another process (or an adapter built from an older row) may have renewed them already.
 */
export class TikTokTokens {
  private tokens: Tokens;
  private renewal: Promise<string> | null = null;
  /** Renewed tokens not stored yet (the write failed): stored before the next call goes on. */
  private unsaved: Record<string, string> | null = null;

  constructor(
    private readonly config: TikTokConfig,
    private readonly client: TikTokClient,
    private readonly store?: CredentialStore,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = tokensOf(config)!;
  }

  /** The access token to call with: the current one, or a renewed one when it expires within RENEW_BEFORE_MS. */
  accessToken(): Promise<string> {
    if (!this.expiring(this.tokens) && !this.unsaved) return Promise.resolve(this.tokens.access);
    this.renewal ??= (this.unsaved ? this.save().then(() => this.tokens.access) : this.renew()).finally(() => {
      this.renewal = null;
    });
    return this.renewal;
  }

  /** TikTok said the token expired (its clock, or a config without the expiry): the next call renews it. */
  expired(token: string): void {
    if (this.tokens.access === token) this.tokens = { ...this.tokens, expiresAt: 0 };
  }

  private expiring(tokens: Tokens): boolean {
    return tokens.expiresAt !== null && tokens.expiresAt - this.now() < RENEW_BEFORE_MS;
  }

  private async renew(): Promise<string> {
    const stored = await this.stored();
    if (this.renewedElsewhere(stored)) return this.tokens.access;
    // The stored refresh token is the latest: an older one may have been spent by that renewal.
    const refreshToken = stored?.refresh ?? this.tokens.refresh;
    let data: unknown;
    try {
      data = await this.client.post(REFRESH_PATH, {
        client_id: this.config.app_id,
        client_secret: this.config.app_secret,
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
      });
    } catch (err) {
      // An answer refusing the renewal (not a network failure, nor TikTok's trouble) needs new credentials,
      // unless another process renewed the tokens meanwhile and spent the refresh token sent.
      if (err instanceof ProviderError && !err.retryable) {
        if (this.renewedElsewhere(await this.stored())) return this.tokens.access;
        throw refreshRefused(err);
      }
      throw err;
    }
    const answer = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
    const access = answer.access_token;
    const expiresIn = answer.expires_in;
    if (typeof access !== 'string' || access === '' || typeof expiresIn !== 'number' || expiresIn <= 0)
      throw new ProviderError('invalid_response', 'the token renewal answered no access token', true, 200, answer);
    const refresh =
      typeof answer.refresh_token === 'string' && answer.refresh_token ? answer.refresh_token : refreshToken;
    const expiresAt = this.now() + expiresIn * 1000;
    this.tokens = { access, refresh, expiresAt };
    this.unsaved = {
      access_token: access,
      refresh_token: refresh,
      access_token_expires_at: new Date(expiresAt).toISOString(),
    };
    await this.save();
    return access;
  }

  /** The tokens as stored now; a failure to read them is retried (nothing was sent). */
  private async stored(): Promise<Tokens | null> {
    try {
      return tokensOf((await this.store?.current()) ?? {});
    } catch (err) {
      throw new ProviderError('credentials_not_read', `the stored tokens could not be read: ${String(err)}`, true);
    }
  }

  /** Whether the stored tokens are newer than ours and current (renewed elsewhere): then they are ours. */
  private renewedElsewhere(stored: Tokens | null): boolean {
    if (!stored || stored.access === this.tokens.access || this.expiring(stored)) return false;
    this.tokens = stored;
    return true;
  }

  /**
   * Stores the renewed tokens. TikTok may have spent the old refresh token, so a call waits until
   * they are stored: a failure is retried (nothing was sent), and the next call stores them first.
   */
  private async save(): Promise<void> {
    const changes = this.unsaved;
    if (!changes) return;
    if (!this.store) {
      this.unsaved = null;
      return;
    }
    try {
      await this.store.save(changes);
    } catch (err) {
      throw new ProviderError('credentials_not_stored', `the renewed tokens could not be stored: ${String(err)}`, true);
    }
    if (this.unsaved === changes) this.unsaved = null;
  }
}
