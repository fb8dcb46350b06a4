import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new endpoint secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The secrets that sign a request: the current one, and the previous one until its expiry (rotation). */
export interface SigningSecrets {
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: string | null;
}

/**
 * Standard Webhooks headers for one attempt: `webhook-signature` is a space-separated list of
 * `v1,<base64 HMAC-SHA256 of id.timestamp.body>`, one entry per valid secret (newest first).
 */
export function signatureHeaders(
  secrets: SigningSecrets,
  webhookId: string,
  nowMs: number,
  body: string,
): Record<string, string> {
  const at = new Date(Math.floor(nowMs / 1000) * 1000);
  const keys = [secrets.secret];
  if (
    secrets.previousSecret &&
    secrets.previousSecretExpiresAt &&
    Date.parse(secrets.previousSecretExpiresAt) > nowMs
  ) {
    keys.push(secrets.previousSecret);
  }
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(at.getTime() / 1000),
    'webhook-signature': keys.map((key) => new Webhook(key).sign(webhookId, at, body)).join(' '),
  };
}
