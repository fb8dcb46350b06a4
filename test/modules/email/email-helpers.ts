import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { startDovecot, type TestDovecot } from '../../helpers/dovecot.ts';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { until } from '../sending/sending.fixtures.ts';

export const PASSWORD = 'imap-secret-pw';
export const SMTP_PASSWORD = 'smtp-secret-pw';

/** Mailboxes the test Dovecot holds: each test that needs its own channel takes the next. */
export const MAILBOXES = Array.from({ length: 6 }, (_, i) => `desk${i}@shop.example`);

export interface EmailChannel {
  id: string;
  address: string;
}

/** The provider object of a channel on the test servers. */
export function emailProvider(
  address: string,
  dovecot: TestDovecot,
  smtp: SmtpSink,
  extra: Record<string, unknown> = {},
) {
  return {
    kind: 'email',
    address,
    smtp: { host: '127.0.0.1', port: smtp.port, secure: false, user: address, password: SMTP_PASSWORD },
    imap: { host: dovecot.host, port: dovecot.port, secure: false, user: address, password: PASSWORD },
    ...extra,
  };
}

export async function createEmailChannel(
  app: FastifyInstance,
  businessId: string,
  provider: Record<string, unknown>,
): Promise<EmailChannel> {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: { type: 'email', identifier: provider.address, provider },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id as string, address: provider.address as string };
}

/** A mail as a person's client writes it. */
export function mail(fields: {
  from: string;
  to: string;
  subject?: string;
  messageId?: string;
  headers?: Record<string, string>;
  body?: string;
  contentType?: string;
}): { raw: string; messageId: string } {
  const messageId = fields.messageId ?? `<${randomUUID()}@person.example>`;
  const headers = {
    From: fields.from,
    To: fields.to,
    Subject: fields.subject ?? 'Hello',
    'Message-ID': messageId,
    Date: new Date().toUTCString(),
    'MIME-Version': '1.0',
    'Content-Type': fields.contentType ?? 'text/plain; charset=utf-8',
    ...fields.headers,
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n');
  return { raw: `${head}\r\n\r\n${(fields.body ?? 'Hi there').replace(/\r?\n/g, '\r\n')}\r\n`, messageId };
}

export interface EmailFixture {
  t: TestApp;
  dovecot: TestDovecot;
  smtp: SmtpSink;
  tenant: Tenant;
  /** A new channel of the tenant on the next free mailbox, once its poller has stored the mailbox's cursor. */
  channel(extra?: Record<string, unknown>): Promise<EmailChannel>;
  close(): Promise<void>;
}

/**
 * One Dovecot, one SMTP sink and one test app for a file: the app may reach loopback servers, runs
 * its workers (sends, media downloads, the poller) and lists mailboxes every 100 ms.
 */
export async function withEmail(env: Record<string, string> = {}): Promise<EmailFixture> {
  const [dovecot, smtp] = await Promise.all([
    startDovecot(MAILBOXES.map((user) => ({ user, password: PASSWORD }))),
    startSmtpSink(),
  ]);
  const t = await buildTestApp(
    { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true', POLLER_REFRESH_MS: '100', POLLER_INTERVAL_MS: '200', ...env },
    { workers: true },
  );
  const tenant = await createTenant(t.app);
  let next = 0;
  return {
    t,
    dovecot,
    smtp,
    tenant,
    async channel(extra = {}) {
      const address = MAILBOXES[next++];
      const channel = await createEmailChannel(t.app, tenant.businessId, emailProvider(address, dovecot, smtp, extra));
      await cursorStored(t, channel.id);
      return channel;
    },
    async close() {
      await t.close();
      await Promise.all([dovecot.close(), smtp.close()]);
    },
  };
}

/** Waits until the poller opened the channel's mailbox and stored where its reading starts. */
export async function cursorStored(t: TestApp, channelId: string): Promise<void> {
  await until(async () => {
    const row = await t.database.db
      .selectFrom('inbound_cursors')
      .select('cursor')
      .where('channel_id', '=', channelId)
      .executeTakeFirst();
    return row?.cursor != null;
  });
}

/** The inbound messages of a channel, oldest first. */
export function inboundOf(t: TestApp, channelId: string) {
  return t.database.db
    .selectFrom('messages')
    .selectAll()
    .where('channel_id', '=', channelId)
    .where('direction', '=', 'inbound')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Waits for `count` inbound messages on the channel. */
export async function received(t: TestApp, channelId: string, count: number) {
  await until(async () => (await inboundOf(t, channelId)).length >= count);
  return inboundOf(t, channelId);
}
