import { createServer, type Server } from 'node:http';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmailConfig } from '../../../src/channels/email/email.config.ts';
import { classifyEmailError, SmtpDropped } from '../../../src/channels/email/email.errors.ts';
import { EmailProvider } from '../../../src/channels/email/email.provider.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { call, createUser, signIn } from '../dashboard-auth/dashboard-helpers.ts';
import { buildTestApp } from '../../helpers/test-app.ts';
import { settled, until } from '../sending/sending.fixtures.ts';
import {
  emailProvider,
  mail,
  PASSWORD,
  received,
  SMTP_PASSWORD,
  withEmail,
  type EmailChannel,
  type EmailFixture,
} from './email-helpers.ts';

let f: EmailFixture;
let channel: EmailChannel;
let other: Tenant;
let files: Server;
let filesUrl: string;

beforeAll(async () => {
  f = await withEmail();
  channel = await f.channel({ default_subject: 'A word from the shop' });
  other = await createTenant(f.t.app, 'Other');
  files = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.end('%PDF-1.4 menu');
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
});
afterAll(async () => {
  await f?.close();
  await new Promise((resolve) => files?.close(resolve));
});

const send = (payload: Record<string, unknown>, headers: Record<string, string> = f.tenant.headers) =>
  f.t.app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers,
    payload: { from: 'email', channel_uuid: channel.id, type: 'text', ...payload },
  });
const accepted = async (payload: Record<string, unknown>, headers?: Record<string, string>) => {
  const res = await send(payload, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().message.uuid as string;
};
const mailsTo = (address: string) => f.smtp.mails.filter((m) => m.to.includes(address));

describe('sending mail by SMTP', () => {
  it('sends a first mail with its own Message-ID and the default subject, logged in with the password, once per Idempotency-Key', async () => {
    const headers = { ...f.tenant.headers, 'idempotency-key': '6d0c8f3e-2b1f-4e0e-9a53-1f6f3c1b2a01' };
    const id = await accepted({ to: '  Gus@Person.Example ', content: { text: 'Your order has shipped' } }, headers);
    expect(await accepted({ to: '  Gus@Person.Example ', content: { text: 'Your order has shipped' } }, headers)).toBe(
      id,
    );
    const row = await settled(f.t, id);
    expect(row.status).toBe('SENT');
    const [sent, ...more] = mailsTo('Gus@Person.Example');
    expect(more).toEqual([]);
    expect(sent.from).toBe(channel.address);
    const parsed = await simpleParser(sent.raw);
    expect(parsed.messageId).toBe(row.provider_message_id);
    expect(parsed.messageId).toMatch(new RegExp(`^<${id}@shop\\.example>$`));
    expect(parsed.subject).toBe('A word from the shop');
    expect(parsed.text?.trim()).toBe('Your order has shipped');
    expect(parsed.inReplyTo).toBeUndefined();
    expect(f.smtp.logins).toContainEqual({ user: channel.address, password: SMTP_PASSWORD });
    // The recipient is the contact's email identity, lower-cased: a mail from them finds the same contact.
    const contact = await f.t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', row.contact_id)
      .executeTakeFirstOrThrow();
    expect(contact.email?.toLowerCase()).toBe('gus@person.example');
  });

  it("answers in the conversation's thread: In-Reply-To and References to the last mail received, Re: its subject", async () => {
    const earlier = '<first@person.example>';
    const question = mail({
      from: 'hal@person.example',
      to: channel.address,
      subject: 'Delivery date',
      headers: { References: earlier, 'In-Reply-To': earlier },
    });
    await f.dovecot.append(channel.address, question.raw);
    await received(f.t, channel.id, 1);
    const id = await accepted({ to: 'hal@person.example', content: { text: 'Tomorrow' } });
    expect((await settled(f.t, id)).status).toBe('SENT');
    const parsed = await simpleParser(mailsTo('hal@person.example')[0].raw);
    expect(parsed.inReplyTo).toBe(question.messageId);
    expect(parsed.references).toEqual([earlier, question.messageId]);
    expect(parsed.subject).toBe('Re: Delivery date');
  });

  it('attaches a file sent by URL, downloaded through the address policy', async () => {
    const id = await accepted({
      to: 'ida@person.example',
      type: 'document',
      content: { url: `${filesUrl}/menu.pdf`, caption: 'Our menu' },
    });
    expect((await settled(f.t, id)).status).toBe('SENT');
    const parsed = await simpleParser(mailsTo('ida@person.example')[0].raw);
    expect(parsed.text?.trim()).toBe('Our menu');
    expect(parsed.attachments.map((a) => [a.filename, a.contentType, a.content.toString()])).toEqual([
      ['menu.pdf', 'application/pdf', '%PDF-1.4 menu'],
    ]);
  });

  it('fails at once on a permanent refusal (5xx) and retries a transient one (4xx)', async () => {
    f.smtp.refuse('nobody@person.example', 550);
    const refused = await settled(f.t, await accepted({ to: 'nobody@person.example', content: { text: 'Hi' } }));
    expect(refused.status).toBe('ERROR');
    expect(refused.error).toContain('smtp_550');
    expect(refused.send_attempts).toBe(1);

    f.smtp.refuse('busy@person.example', 451);
    const id = await accepted({ to: 'busy@person.example', content: { text: 'Hi' } });
    await until(() => f.smtp.refused.includes('busy@person.example'));
    f.smtp.refuse('busy@person.example', 0);
    const row = await settled(f.t, id);
    expect(row.status).toBe('SENT');
    expect(row.send_attempts).toBeGreaterThanOrEqual(2);
  });

  it('marks a sent mail ERROR when a bounce (DSN) quoting its Message-ID comes back', async () => {
    const id = await accepted({ to: 'gone@person.example', content: { text: 'Hello?' } });
    const row = await settled(f.t, id);
    expect(row.status).toBe('SENT');
    const boundary = 'dsn-boundary';
    const dsn = [
      `From: Mail Delivery System <MAILER-DAEMON@mx.example>`,
      `To: ${channel.address}`,
      'Subject: Undelivered Mail Returned to Sender',
      `Message-ID: <dsn-${id}@mx.example>`,
      'Auto-Submitted: auto-replied',
      'MIME-Version: 1.0',
      `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain',
      '',
      'Your message could not be delivered.',
      `--${boundary}`,
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.example',
      '',
      'Final-Recipient: rfc822; gone@person.example',
      'Action: failed',
      'Status: 5.1.1',
      'Diagnostic-Code: smtp; 550 5.1.1 user unknown',
      `--${boundary}`,
      'Content-Type: text/rfc822-headers',
      '',
      `From: ${channel.address}`,
      'To: gone@person.example',
      `Message-ID: ${row.provider_message_id}`,
      `--${boundary}--`,
      '',
    ].join('\r\n');
    await f.dovecot.append(channel.address, dsn);
    await until(async () => (await settled(f.t, id)).status === 'ERROR');
    expect((await settled(f.t, id)).error).toContain('5.1.1');
    // The report itself is no conversation.
    const stored = await f.t.database.db
      .selectFrom('messages')
      .select('id')
      .where('sender_address', '=', 'MAILER-DAEMON@mx.example')
      .execute();
    expect(stored).toEqual([]);
  });

  it('sends a reply written in the dashboard as a mail in the thread', async () => {
    await createUser(f.t.app, f.tenant.businessId, {
      email: 'owner@shop.example',
      password: 'owner-password-1',
      role: 'owner',
    });
    const browser = await signIn(f.t.app, 'owner@shop.example', 'owner-password-1');
    const question = mail({ from: 'kim@person.example', to: channel.address, subject: 'Gift card' });
    await f.dovecot.append(channel.address, question.raw);
    await until(
      async () =>
        (
          await f.t.database.db
            .selectFrom('messages')
            .select('id')
            .where('sender_address', '=', 'kim@person.example')
            .execute()
        ).length === 1,
    );
    const { conversation_id } = await f.t.database.db
      .selectFrom('messages')
      .select('conversation_id')
      .where('sender_address', '=', 'kim@person.example')
      .executeTakeFirstOrThrow();
    const res = await call(f.t.app, browser, 'POST', `/conversations/${conversation_id}/messages`, {
      text: 'Yes, we sell them',
    });
    expect(res.statusCode, res.body).toBe(202);
    await until(() => mailsTo('kim@person.example').length === 1);
    const parsed = await simpleParser(mailsTo('kim@person.example')[0].raw);
    expect(parsed.text?.trim()).toBe('Yes, we sell them');
    expect(parsed.inReplyTo).toBe(question.messageId);
    expect(parsed.subject).toBe('Re: Gift card');
  });

  it('writes nothing of a mail before beforeSend resolves, and nothing at all when it rejects', async () => {
    const provider = new EmailProvider(emailProvider(channel.address, f.dovecot, f.smtp) as EmailConfig);
    const loginsBefore = f.smtp.logins.length;
    let loginsAtStart = -1;
    const sending = provider.send({
      to: 'lee@person.example',
      content: { kind: 'text', text: 'Hi' },
      beforeSend: () => {
        loginsAtStart = f.smtp.logins.length;
        return Promise.reject(new Error('the call was not started'));
      },
    });
    await expect(sending).rejects.toThrow('the call was not started');
    // Called once the connection was open and logged in: everything that can fail without the server
    // hearing of the mail came before it.
    expect(loginsAtStart).toBe(loginsBefore + 1);
    expect(mailsTo('lee@person.example')).toEqual([]);
  });

  it("refuses another business's channel", async () => {
    const res = await send({ to: 'jo@person.example', content: { text: 'Hi' } }, other.headers);
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    expect(mailsTo('jo@person.example')).toEqual([]);
  });

  it('refuses a recipient that is not an email address', async () => {
    const res = await send({ to: 'not an address', content: { text: 'Hi' } });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('email address');
  });
});

describe('email channels', () => {
  const create = (provider: Record<string, unknown>, businessId = f.tenant.businessId) =>
    f.t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${businessId}/channels`,
      headers: adminHeaders,
      payload: { type: 'email', identifier: 'bad@shop.example', provider },
    });

  it('refuses a config that is not one with 400', async () => {
    const good = emailProvider('bad@shop.example', f.dovecot, f.smtp);
    const bad = [
      { ...good, imap: undefined },
      { ...good, smtp: { ...good.smtp, port: 0 } },
      { ...good, smtp: { ...good.smtp, tls: true } },
      { ...good, address: 'not-an-address' },
    ];
    for (const provider of bad) {
      const res = await create(provider);
      expect(res.statusCode, JSON.stringify(provider)).toBe(400);
    }
  });

  it('never shows the passwords, and stores them sealed', async () => {
    const created = await f.t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${f.tenant.businessId}/channels/${channel.id}`,
      headers: adminHeaders,
    });
    expect(created.statusCode).toBe(200);
    expect(created.json().channel.provider).toEqual({ kind: 'email', account: channel.address });
    const list = await f.t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${f.tenant.businessId}/channels`,
      headers: adminHeaders,
    });
    for (const body of [created.body, list.body]) {
      expect(body).not.toContain(PASSWORD);
      expect(body).not.toContain(SMTP_PASSWORD);
    }
    const row = await f.t.database.db
      .selectFrom('channels')
      .select('provider_config')
      .where('id', '=', channel.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row.provider_config)).not.toContain(PASSWORD);
    expect(JSON.stringify(row.provider_config)).not.toContain(SMTP_PASSWORD);
  });

  it('refuses a literal private server address unless private targets are allowed', async () => {
    const strict = await buildTestApp({}, { workers: false });
    try {
      const tenant = await createTenant(strict.app);
      const provider = emailProvider('strict@shop.example', f.dovecot, f.smtp);
      const res = await strict.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${tenant.businessId}/channels`,
        headers: adminHeaders,
        payload: { type: 'email', identifier: 'strict@shop.example', provider },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message ?? res.body).toContain('smtp.host');
    } finally {
      await strict.close();
    }
  });
});

describe('SMTP failures', () => {
  it('are classified: replies by class, connections retryable, a drop after the start never resent', () => {
    expect(classifyEmailError(Object.assign(new Error('x'), { responseCode: 550, response: '550 no' }))).toMatchObject({
      retryable: false,
      code: 'smtp_550',
    });
    expect(classifyEmailError(Object.assign(new Error('x'), { responseCode: 421 }))).toMatchObject({ retryable: true });
    expect(classifyEmailError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toMatchObject({
      retryable: true,
      code: 'network_error',
    });
    expect(classifyEmailError(Object.assign(new Error('bad login'), { code: 'EAUTH' }))).toMatchObject({
      retryable: false,
    });
    expect(classifyEmailError(new SmtpDropped('socket closed'))).toMatchObject({
      retryable: true,
      mayHaveArrived: true,
    });
  });
});
