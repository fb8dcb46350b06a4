import { isDeepStrictEqual } from 'node:util';
import { Value } from 'typebox/value';
import type { CredentialStore } from '../../channels/credential-store.ts';
import type { ProviderHttpOptions } from '../../channels/http-deps.ts';
import type { ChannelProvider } from '../../channels/provider.ts';
import {
  channelKind,
  createChannelProvider,
  kindsServing,
  mirroringKinds,
  providerAccountOf,
  type ProviderConfig,
} from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict, invalid, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { resealStored, type SealCounts, type SecretBox } from '../../lib/secret-box.ts';
import {
  checkTargetLiteral,
  checkTargetUrl,
  CredentialsInUrlError,
  isDnsFailure,
  SsrfError,
  type TargetPolicy,
} from '../../net/ssrf-guard.ts';
import { targetRefusal } from '../../net/target-refusal.ts';
import { agentsRepository } from '../agents/agents.repository.ts';
import { ChannelCache } from './channel-cache.ts';
import { digestField, openProviderConfig, sealProviderConfig, type StoredProviderConfig } from './channel-secrets.ts';
import { channelsRepository, type ChannelKeys, type ChannelRow } from './channels.repository.ts';
import type { ChannelForm, CreateChannelBody, UpdateChannelBody } from './channels.schemas.ts';

export type { ChannelRow } from './channels.repository.ts';

/**
 * How long a channel found by its provider account is kept before it is read again. A change made
 * by any server process is announced (CHANNEL_CHANGED) and forgets it at once; should an
 * announcement be missed, the inbound service reads the channel again when its signature does not
 * match, and its storing transaction checks that the channel is still the one it names
 * (inbound.service.ts).
 */
const ACCOUNT_CACHE_MS = 30_000;

/** How many times a renewal is written again when another writer changed the config meanwhile. */
const RENEWAL_WRITES = 5;

const duplicate = (field: string) => conflict(`a channel with this ${field} already exists`, [{ field }]);

/**
 * Channels of a business (operator API) and their provider adapters (for sends and inbound). The
 * provider's secrets are stored sealed (channel-secrets.ts) and opened only to build an adapter.
 *
 * Rows read for inbound notifications and for sends are cached. Every change is announced to every
 * server process (channelsRepository, CHANNEL_CHANGED), whose `forgetAnnounced` drops the copies;
 * while announcements may be missed (`setTrusted(false)`: the listening connection is down),
 * nothing is cached.
 */
export class ChannelsService {
  private readonly providers = new Map<string, { configKey: string; provider: ChannelProvider }>();
  private readonly byAccount = new Map<string, { row: ChannelRow; expiresAt: number }>();
  private readonly forSending = new ChannelCache((businessId, id) => channelsRepository.find(this.db, businessId, id));
  /** Counts the changes heard, so that a row read before one is not cached after it. */
  private changes = 0;
  /** Whether every change reaches this process (one process alone, or announcements heard). */
  private trusted = true;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    /** Which addresses a provider may be called at; the URL fields are checked against it when set. */
    private readonly policy: TargetPolicy,
    /** How the adapters reach the network: a dispatcher that applies the same policy to every connection. */
    private readonly http?: ProviderHttpOptions,
  ) {}

  async create(businessId: string, body: CreateChannelBody): Promise<ChannelForm> {
    const identifier = this.identifierOf(body.type, body.identifier);
    const provider = body.provider;
    // A type some provider kind serves is sent and received through it, so it needs one.
    if (!provider && kindsServing(body.type).length > 0)
      throw invalid(`a ${body.type} channel needs its provider`, [{ path: '/provider' }]);
    if (provider && !kindsServing(body.type).some((k) => k.kind === provider.kind)) {
      throw invalid(`provider ${provider.kind} does not serve ${body.type} channels`, [{ path: '/provider/kind' }]);
    }
    if (provider) await this.checkUrlFields(provider.kind, provider);
    if (provider) this.checkHostFields(provider.kind, provider);
    if (provider) checkConfig(provider);
    if (body.agent_id !== undefined) await this.checkAgent(businessId, body.agent_id);
    const account = provider ? providerAccountOf(provider) : null;
    if (provider && account) this.checkIdentifierIsAccount(body.type, identifier, provider.kind, account);
    if (await channelsRepository.findByIdentifier(this.db, businessId, body.type, identifier))
      throw duplicate('identifier');
    if (provider && account && (await channelsRepository.findByProviderAccount(this.db, provider.kind, account))) {
      throw duplicate('provider account');
    }
    try {
      const row = await channelsRepository.insert(this.db, {
        business_id: businessId,
        id: newId(),
        type: body.type,
        name: body.name ?? `${body.type} ${identifier}`,
        identifier,
        provider_kind: provider?.kind ?? null,
        provider_account: account,
        provider_config: provider ? sealProviderConfig(this.secrets, provider) : {},
        pace_per_second:
          body.pace_per_second ?? (provider && channelKind(provider.kind)?.capabilities.defaultPacePerSecond),
        agent_id: body.agent_id ?? null,
      });
      return toChannelForm(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('a channel with this identifier or provider account already exists');
      throw err;
    }
  }

  async list(businessId: string, limit: number): Promise<ChannelForm[]> {
    return (await channelsRepository.list(this.db, businessId, limit)).map(toChannelForm);
  }

  async read(businessId: string, id: string): Promise<ChannelForm> {
    return toChannelForm(await this.get(businessId, id));
  }

  /** Renames, re-paces or rotates the provider's secrets; the adapter is rebuilt on next use. */
  async update(businessId: string, id: string, body: UpdateChannelBody): Promise<ChannelForm> {
    const row = await this.get(businessId, id);
    let providerConfig: ProviderConfig | undefined;
    let rotated = false;
    if (body.provider !== undefined) {
      if (!row.provider_kind) throw invalid('the channel has no provider to update', [{ path: '/provider' }]);
      const kind = channelKind(row.provider_kind);
      const replaceable = new Set<string>([...(kind?.rotatingFields ?? []), ...(kind?.changeableFields ?? [])]);
      const other = Object.keys(body.provider).find((field) => !replaceable.has(field));
      if (other !== undefined)
        throw invalid(`provider ${row.provider_kind} has no field ${other} to replace`, [
          { path: `/provider/${other}` },
        ]);
      await this.checkUrlFields(row.provider_kind, body.provider);
      this.checkHostFields(row.provider_kind, body.provider);
      providerConfig = { ...this.openConfig(row), ...body.provider };
      checkConfig(providerConfig);
      rotated = Object.keys(body.provider).some((field) => (kind?.rotatingFields as readonly string[]).includes(field));
    }
    if (body.agent_id) await this.checkAgent(businessId, body.agent_id);
    const changes = {
      ...(body.agent_id !== undefined && body.agent_id !== row.agent_id ? { agent_id: body.agent_id } : {}),
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.pace_per_second !== undefined ? { pace_per_second: body.pace_per_second } : {}),
      ...(providerConfig ? { provider_config: sealProviderConfig(this.secrets, providerConfig) } : {}),
      // New secrets may be the ones the provider wants: the channel no longer shows as needing them.
      ...(rotated ? { credentials_rejected_at: null } : {}),
    };
    if (Object.keys(changes).length === 0) return toChannelForm(row);
    const updated = await channelsRepository.update(this.db, businessId, id, changes);
    if (!updated) throw notFound('channel');
    this.forget(updated);
    return toChannelForm(updated);
  }

  /**
   * The provider refused the channel's credentials (a send's ErrorClassification.credentialsRejected):
   * it shows as needing new ones until a PATCH replaces a secret.
   */
  async credentialsRejected(channel: ChannelRow): Promise<void> {
    if (channel.credentials_rejected_at != null) return;
    const updated = await channelsRepository.markCredentialsRejected(this.db, channel.business_id, channel.id);
    if (updated) this.forget(updated);
  }

  async remove(businessId: string, id: string) {
    const removed = await channelsRepository.remove(this.db, businessId, id);
    if (!removed) throw notFound('channel');
    this.forget(removed);
    return { success: true };
  }

  /** The channel row (with its provider config), or 404. */
  async get(businessId: string, id: string): Promise<ChannelRow> {
    const row = await channelsRepository.find(this.db, businessId, id);
    if (!row) throw notFound('channel');
    return row;
  }

  /** The channel row, or undefined (for callers with their own answer, e.g. 403 on send-template). */
  find(businessId: string, id: string): Promise<ChannelRow | undefined> {
    return channelsRepository.find(this.db, businessId, id);
  }

  /** The channel row for a send (the route's and the worker's), reused briefly (channel-cache.ts). */
  findForSending(businessId: string, id: string): Promise<ChannelRow | undefined> {
    return this.trusted ? this.forSending.get(businessId, id) : channelsRepository.find(this.db, businessId, id);
  }

  /**
   * The business's channels that mirror its other channels (ChannelCapabilities.mirrors), read with
   * `db` (a caller's transaction: on PGlite it holds the only connection).
   */
  mirroring(businessId: string, db: Db = this.db): Promise<ChannelRow[]> {
    return channelsRepository.ofKinds(db, businessId, mirroringKinds);
  }

  findByIdentifier(businessId: string, type: string, identifier: string): Promise<ChannelRow | undefined> {
    return channelsRepository.findByIdentifier(this.db, businessId, type, identifier);
  }

  /**
   * The channel a provider's notification names by its account id (any business); cached briefly,
   * read from the database when `fresh`.
   */
  async findByProviderAccount(
    kind: string,
    account: string,
    options: { fresh?: boolean } = {},
  ): Promise<ChannelRow | undefined> {
    const key = `${kind}:${account}`;
    const cached = this.byAccount.get(key);
    if (cached && cached.expiresAt > Date.now() && !options.fresh) return cached.row;
    const readAt = this.changes;
    const row = await channelsRepository.findByProviderAccount(this.db, kind, account);
    if (row && this.trusted && readAt === this.changes)
      this.byAccount.set(key, { row, expiresAt: Date.now() + ACCOUNT_CACHE_MS });
    else this.byAccount.delete(key);
    return row;
  }

  /**
   * A channel of the kind whose secret `key` equals `value` (Meta's verify_token): found by the
   * value's digest, so the secret is never compared in the clear, nor stored so. The digests under
   * the fallback keys find a channel not yet sealed again after a rotation of SECRET_KEY.
   */
  findBySecret(kind: string, key: string, value: string): Promise<ChannelRow | undefined> {
    return channelsRepository.findByProviderSetting(this.db, kind, digestField(key), this.secrets.digests(value));
  }

  /**
   * Seals with the current SECRET_KEY the secrets of channels stored in the clear by an earlier
   * version or sealed with a fallback key, so every channel can be found by its verify token's
   * digest; run at start. Answers how many were sealed, and how many hold a secret no key opens.
   */
  sealStored(): Promise<SealCounts> {
    return resealStored(
      (after: ChannelRow | undefined) => channelsRepository.withProviderAfter(this.db, after, 200),
      (row) => {
        const stored = row.provider_config as StoredProviderConfig;
        const config = sealProviderConfig(this.secrets, stored);
        return isDeepStrictEqual(config, stored) ? undefined : config;
      },
      async (row, config) => {
        this.forget(row);
        return channelsRepository.replaceConfigIf(this.db, row, config);
      },
    );
  }

  /**
   * The provider adapter of a channel, built once per channel and configuration: a row read after a
   * rotation (here or in another process) has another config, so it gets a new adapter.
   */
  providerFor(channel: ChannelRow): ChannelProvider {
    if (!channel.provider_kind) throw new Error(`channel ${channel.id} has no provider`);
    const configKey = JSON.stringify(channel.provider_config);
    const cached = this.providers.get(channel.id);
    if (cached && cached.configKey === configKey) return cached.provider;
    const provider = createChannelProvider(this.openConfig(channel), this.http, this.credentialStore(channel));
    this.providers.set(channel.id, { configKey, provider });
    return provider;
  }

  /** Where the channel's adapter reads and writes the secrets it renews itself (credential-store.ts). */
  private credentialStore(channel: ChannelRow): CredentialStore {
    return {
      current: async () => {
        const row = await channelsRepository.find(this.db, channel.business_id, channel.id);
        return row && row.provider_kind === channel.provider_kind ? this.openConfig(row) : undefined;
      },
      save: (changes) => this.saveRenewed(channel, changes),
    };
  }

  /**
   * Writes what an adapter renewed (its kind's renewedFields) into the channel's config, sealed: the
   * one write path of secrets an adapter changes. Merged into the config as stored now, and written
   * only if no other writer (a PATCH, another renewal) came between, else read and merged again.
   * Nothing is written for a channel deleted meanwhile. The new config builds a new adapter.
   */
  private async saveRenewed(channel: ChannelRow, changes: Record<string, string>): Promise<void> {
    const kind = channelKind(channel.provider_kind);
    const renewable = new Set<string>(kind?.renewedFields ?? []);
    const other = Object.keys(changes).find((field) => !renewable.has(field));
    if (!kind || other !== undefined) throw new Error(`provider ${channel.provider_kind} does not renew ${other}`);
    for (let write = 0; write < RENEWAL_WRITES; write++) {
      const row = await channelsRepository.find(this.db, channel.business_id, channel.id);
      if (!row || row.provider_kind !== channel.provider_kind) return;
      const config = { ...this.openConfig(row), ...changes };
      if (!Value.Check(kind.schema, config)) throw new Error(`renewed ${kind.kind} credentials do not fit its config`);
      if (await channelsRepository.replaceConfigIf(this.db, row, sealProviderConfig(this.secrets, config))) {
        this.forget(row);
        return;
      }
    }
    throw new Error(`the renewed credentials of channel ${channel.id} could not be stored: its config kept changing`);
  }

  /**
   * The URLs a provider is called at, with the channel's secrets: http(s), no credentials, and no
   * private address (literal, or what the host name resolves to now) unless the policy allows them.
   * A name that does not resolve yet passes: every call is judged again when it connects (the
   * dispatcher), since what a name resolves to may change.
   */
  private async checkUrlFields(kind: string, fields: Record<string, unknown>): Promise<void> {
    for (const field of channelKind(kind)?.urlFields ?? []) {
      const value = fields[field];
      if (typeof value !== 'string') continue;
      try {
        await checkTargetUrl(value, this.policy);
      } catch (err) {
        if (isDnsFailure(err)) continue;
        if (!(err instanceof SsrfError)) throw err;
        // The guard's advice for webhooks (a custom header) does not apply to a provider URL.
        const why =
          err instanceof CredentialsInUrlError ? 'credentials in the URL are not allowed' : targetRefusal(err);
        throw invalid(`provider.${field} refused: ${why}`, [{ path: `/provider/${field}` }]);
      }
    }
  }

  /**
   * The host names a provider is connected to outside HTTP (SMTP, IMAP): a literal private address
   * is refused unless the policy allows it; a name passes, and every connection resolves it again
   * under the policy (ProviderHttpOptions.resolveHost).
   */
  private checkHostFields(kind: string, fields: Record<string, unknown>): void {
    for (const path of channelKind(kind)?.hostFields ?? []) {
      const [field, key] = path.split('.');
      const holder = key === undefined ? fields : fields[field];
      const value = key === undefined ? holder : (holder as Record<string, unknown> | undefined)?.[key];
      if (typeof value !== 'string') continue;
      const host = value.includes(':') && !value.startsWith('[') ? `[${value}]` : value;
      try {
        checkTargetLiteral(`https://${host}/`, this.policy);
      } catch (err) {
        if (!(err instanceof SsrfError)) throw err;
        throw invalid(`provider.${path} refused: ${targetRefusal(err)}`, [
          { path: `/provider/${path.replace('.', '/')}` },
        ]);
      }
    }
  }

  /** A channel's default agent is one of the business's: another's, or none, is a bad reference (400). */
  private async checkAgent(businessId: string, agentId: string): Promise<void> {
    if (!(await agentsRepository.find(this.db, businessId, agentId)))
      throw invalid('agent_id is not an AI agent of the business', [{ path: '/agent_id' }]);
  }

  private openConfig(row: ChannelRow): ProviderConfig {
    return openProviderConfig(this.secrets, row.provider_config) as ProviderConfig;
  }

  /** A change announced by a server process (this one too): the payload of CHANNEL_CHANGED. */
  forgetAnnounced(payload: string): void {
    let keys: ChannelKeys;
    try {
      keys = JSON.parse(payload) as ChannelKeys;
    } catch {
      // Not an announcement this version writes: forget everything rather than keep a stale copy.
      return this.forgetAll();
    }
    this.forget(keys);
  }

  /** Whether announcements are heard; while they may be missed, nothing is cached. */
  setTrusted(trusted: boolean): void {
    this.trusted = trusted;
    this.forgetAll();
  }

  private forgetAll(): void {
    this.changes += 1;
    this.byAccount.clear();
    this.forSending.clear();
  }

  private forget(row: ChannelKeys): void {
    this.changes += 1;
    this.providers.delete(row.id);
    this.forSending.forget(row.business_id, row.id);
    if (row.provider_kind && row.provider_account)
      this.byAccount.delete(`${row.provider_kind}:${row.provider_account}`);
  }

  /** 400 when the kind's channels are identified by their provider account and this one is not. */
  private checkIdentifierIsAccount(type: string, identifier: string, kind: string, account: string): void {
    const entry = channelKind(kind);
    if (!entry?.identifierIsAccount) return;
    // Mailbox addresses are one whatever their case.
    const same = (a: string) => (entry.address.kind === 'email' ? a.toLowerCase() : a);
    if (same(this.identifierOf(type, account)) !== same(identifier))
      throw invalid(`identifier must be the provider's ${entry.accountField} (${account})`, [{ path: '/identifier' }]);
  }

  /**
   * A channel's own address: numbers (the types served by phone-addressed kinds) are stored as
   * digits with country code (a leading + is accepted); anything else as given, trimmed.
   */
  private identifierOf(type: string, identifier: string): string {
    const trimmed = identifier.trim();
    if (!kindsServing(type).some((k) => k.address.kind === 'phone')) {
      if (trimmed === '') throw invalid('identifier must not be blank', [{ path: '/identifier' }]);
      return trimmed;
    }
    if (!/^\+?[0-9]{8,15}$/.test(trimmed)) {
      throw invalid(`a ${type} identifier is the number in digits with country code`, [{ path: '/identifier' }]);
    }
    return trimmed.replace(/^\+/, '');
  }
}

/** The operator form of a channel: never the provider's secrets, nor credentials a stored URL may hold. */
export function toChannelForm(row: ChannelRow): ChannelForm {
  const baseUrl = withoutCredentials((row.provider_config as { api_base_url?: unknown }).api_base_url);
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    identifier: row.identifier,
    pace_per_second: row.pace_per_second,
    agent_id: row.agent_id,
    needs_credentials: row.credentials_rejected_at != null,
    provider: row.provider_kind
      ? {
          kind: row.provider_kind,
          account: row.provider_account,
          ...(typeof baseUrl === 'string' ? { api_base_url: baseUrl } : {}),
        }
      : null,
    created_at: row.created_at,
  };
}

/** A URL as shown: without user name and password (a row stored before they were refused may hold them). */
function withoutCredentials(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  if (!value.includes('@')) return value;
  try {
    const url = new URL(value);
    url.username = '';
    url.password = '';
    return url.href;
  } catch {
    return undefined;
  }
}

/** A config its kind refuses as a whole (ChannelKind.configRefusal): 400 at the field it names. */
function checkConfig(config: ProviderConfig): void {
  const refusal = channelKind(config.kind)?.configRefusal?.(config);
  if (refusal) throw invalid(refusal.message, [{ path: `/provider${refusal.path}` }]);
}
