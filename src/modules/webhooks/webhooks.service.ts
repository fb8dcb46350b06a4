import type { Db } from '../../db/database.ts';
import { CursorCodec } from '../../http/cursor.ts';
import { conflict, invalid, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { resealStored, type SealCounts, type SecretBox } from '../../lib/secret-box.ts';
import { checkTargetUrl, isDnsFailure, SsrfError, type TargetPolicy } from '../../net/ssrf-guard.ts';
import { targetRefusal } from '../../net/target-refusal.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import {
  webhookDeliveriesRepository as deliveries,
  type DeliveryRow,
  type LoggedAttempt,
} from './webhook-deliveries.repository.ts';
import { maskedHeaders, resealHeaders, sealGivenHeaders, type StoredHeaders } from './webhook-header-secrets.ts';
import { checkCustomHeaders } from './webhook-headers.ts';
import { newWebhookSecret } from './webhook-signing.ts';
import { webhooksRepository, type SealedSecrets, type StoredSecrets, type WebhookRow } from './webhooks.repository.ts';
import type {
  CreateWebhookBody,
  DeliveryAttemptForm,
  DeliveryForm,
  UpdateWebhookBody,
  WebhookForm,
} from './webhooks.schemas.ts';

/** Most webhooks per business. */
export const MAX_WEBHOOKS = 20;
/** How long a rotated-out secret keeps signing. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** How long the delivery log (attempts and finished deliveries) is kept. */
export const LOG_RETENTION_MS = 30 * 24 * 3600 * 1000;

const storedHeaders = (row: Pick<WebhookRow, 'headers' | 'headers_sealed'>): StoredHeaders => ({
  headers: row.headers,
  sealed: row.headers_sealed,
});

/** The webhook as answers show it: header values masked (`headerValues` opens them to take their last characters). */
function toWebhookForm(row: WebhookRow, headerValues: SecretBox): WebhookForm {
  return {
    id: row.id,
    event: row.event,
    url: row.url,
    method: row.method,
    headers: maskedHeaders(headerValues, storedHeaders(row)),
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    disabled_at: row.disabled_at,
    failing_since: row.first_failure_at,
    last_success_at: row.last_success_at,
    previous_secret_expires_at: row.previous_secret_expires_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const toAttemptForm = (row: LoggedAttempt): DeliveryAttemptForm => ({
  id: row.delivery_id,
  message_id: row.message_id,
  attempt: row.attempt,
  status_code: row.status_code,
  ok: row.ok,
  error: row.error,
  duration_ms: row.duration_ms,
  response_body: row.response_body,
  next_attempt_at: row.next_attempt_at,
  created_at: row.created_at,
});

const toDeliveryForm = (row: DeliveryRow): DeliveryForm => ({
  id: row.id,
  message_id: row.message_id,
  state: row.state,
  attempts: row.attempts,
  next_attempt_at: row.next_attempt_at,
  last_error: row.last_error,
  created_at: row.created_at,
});

/** Webhook registrations of a business (operator API and dashboard), their log and redeliveries. */
export class WebhooksService {
  constructor(
    private readonly db: Db,
    private readonly policy: TargetPolicy,
    private readonly clock: Clock,
    private readonly wakeWorker: () => void,
    /** Seals the signing secrets at rest; the delivery worker opens them to sign. */
    private readonly secrets: SecretBox,
    /** Seals the custom header values at rest; the delivery worker opens them to send. */
    private readonly headerValues: SecretBox,
    /** Signs the cursors of the attempt log, bound to its webhook. */
    private readonly cursors: CursorCodec,
  ) {}

  private async checkUrl(url: string): Promise<string> {
    try {
      return (await checkTargetUrl(url, this.policy)).href;
    } catch (err) {
      if (err instanceof SsrfError) throw invalid(`url refused: ${targetRefusal(err)}`, [{ path: '/url' }]);
      if (isDnsFailure(err)) throw invalid('url refused: its host does not resolve', [{ path: '/url' }]);
      throw err;
    }
  }

  private form(row: WebhookRow): WebhookForm {
    return toWebhookForm(row, this.headerValues);
  }

  private async row(businessId: string, id: string): Promise<WebhookRow> {
    const row = await webhooksRepository.find(this.db, businessId, id);
    if (!row) throw notFound('webhook');
    return row;
  }

  async create(businessId: string, body: CreateWebhookBody): Promise<{ webhook: WebhookForm; secret: string }> {
    const url = await this.checkUrl(body.url);
    const headers = sealGivenHeaders(this.headerValues, checkCustomHeaders(body.headers ?? {}), {
      headers: {},
      sealed: true,
    });
    if ((await webhooksRepository.count(this.db, businessId)) >= MAX_WEBHOOKS)
      throw conflict(`a business has at most ${MAX_WEBHOOKS} webhooks`);
    const secret = newWebhookSecret();
    const at = isoAt(this.clock.now());
    const enabled = body.enabled ?? true;
    const row = await webhooksRepository.insert(this.db, {
      business_id: businessId,
      id: newId(),
      event: body.event,
      url,
      method: body.method ?? 'POST',
      headers,
      headers_sealed: true,
      secret: this.secrets.seal(secret),
      enabled,
      disabled_reason: enabled ? null : 'disabled_by_operator',
      disabled_at: enabled ? null : at,
      created_at: at,
      updated_at: at,
    });
    return { webhook: this.form(row), secret };
  }

  async list(businessId: string, limit: number): Promise<WebhookForm[]> {
    return (await webhooksRepository.list(this.db, businessId, limit)).map((row) => this.form(row));
  }

  async read(businessId: string, id: string): Promise<WebhookForm> {
    return this.form(await this.row(businessId, id));
  }

  async update(businessId: string, id: string, body: UpdateWebhookBody): Promise<WebhookForm> {
    const current = await this.row(businessId, id);
    const at = isoAt(this.clock.now());
    const url = body.url === undefined ? undefined : await this.checkUrl(body.url);
    const headers =
      body.headers === undefined
        ? undefined
        : sealGivenHeaders(this.headerValues, checkCustomHeaders(body.headers), storedHeaders(current));
    const enabling = body.enabled === true && !current.enabled;
    const disabling = body.enabled === false && current.enabled;
    const row = await webhooksRepository.update(this.db, businessId, id, {
      url,
      method: body.method,
      ...(headers === undefined ? {} : { headers, headers_sealed: true }),
      updated_at: at,
      ...(enabling ? { enabled: true, disabled_reason: null, disabled_at: null, first_failure_at: null } : {}),
      ...(disabling ? { enabled: false, disabled_reason: 'disabled_by_operator', disabled_at: at } : {}),
    });
    if (!row) throw notFound('webhook');
    // Deliveries held while it was disabled are due again.
    if (enabling) this.wakeWorker();
    return this.form(row);
  }

  async remove(businessId: string, id: string): Promise<{ success: true }> {
    if (!(await webhooksRepository.remove(this.db, businessId, id))) throw notFound('webhook');
    return { success: true };
  }

  /** A new secret (shown once); the old one keeps signing next to it for 24 hours. */
  async rotateSecret(businessId: string, id: string): Promise<{ webhook: WebhookForm; secret: string }> {
    const nowMs = this.clock.now();
    const secret = newWebhookSecret();
    const row = await webhooksRepository.rotateSecret(
      this.db,
      businessId,
      id,
      this.secrets.seal(secret),
      isoAt(nowMs + ROTATION_OVERLAP_MS),
      isoAt(nowMs),
    );
    if (!row) throw notFound('webhook');
    return { webhook: this.form(row), secret };
  }

  /**
   * Seals with the current SECRET_KEY the signing secrets and custom header values stored in the
   * clear by an earlier version or sealed with a fallback key (they work meanwhile: the worker opens
   * them with any key); run at start. Answers how many webhooks were sealed, and how many hold a
   * secret no key opens.
   */
  sealStored(): Promise<SealCounts> {
    return resealStored(
      (after: StoredSecrets | undefined) => webhooksRepository.secretsAfter(this.db, after, 200),
      (row): SealedSecrets | undefined => {
        const secret = this.secrets.reseal(row.secret);
        const previous = row.previous_secret === null ? null : this.secrets.reseal(row.previous_secret);
        const headers = resealHeaders(this.headerValues, storedHeaders(row));
        if (secret === row.secret && previous === row.previous_secret && headers === undefined) return undefined;
        return { secret, previous_secret: previous, headers: headers ?? row.headers };
      },
      (row, sealed) => webhooksRepository.replaceSecretsIf(this.db, row, sealed),
    );
  }

  /** The attempt log of a webhook, newest first, paged by cursor. */
  async attempts(
    businessId: string,
    id: string,
    limit: number,
    cursor?: string,
  ): Promise<{ deliveries: DeliveryAttemptForm[]; next_cursor: string | null }> {
    const scope = CursorCodec.scope({ business: businessId, webhook: id });
    const after = cursor === undefined ? undefined : this.cursors.decode(cursor, scope);
    await this.row(businessId, id);
    const rows = await deliveries.attempts(this.db, businessId, id, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      deliveries: page.map(toAttemptForm),
      next_cursor:
        rows.length > limit && last ? this.cursors.encode({ createdAt: last.created_at, id: last.id }, scope) : null,
    };
  }

  /** Sends a delivery again now, with its original payload and webhook-id. */
  async redeliver(businessId: string, id: string, deliveryId: string): Promise<DeliveryForm> {
    const webhook = await this.row(businessId, id);
    const delivery = await deliveries.find(this.db, businessId, id, deliveryId);
    if (!delivery) throw notFound('delivery');
    if (!webhook.enabled) throw conflict('the webhook is disabled; enable it first');
    const row = await deliveries.redeliver(this.db, businessId, deliveryId, isoAt(this.clock.now()));
    if (!row) throw conflict('the delivery is being sent right now');
    this.wakeWorker();
    return toDeliveryForm(row);
  }

  /** Deletes log rows and finished deliveries older than 30 days, in batches; returns how many went. */
  async cleanup(batch = 5_000): Promise<number> {
    const cutoff = isoAt(this.clock.now() - LOG_RETENTION_MS);
    let total = 0;
    for (;;) {
      const removed = await deliveries.deleteOlderThan(this.db, cutoff, batch);
      total += removed;
      if (removed < batch) return total;
    }
  }
}
