import { isIP } from 'node:net';
import MailComposer from 'nodemailer/lib/mail-composer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { SmtpDropped } from './email.errors.ts';
import type { EmailConfig } from './email.config.ts';

/** A composed mail and its envelope. */
export interface OutgoingMail {
  from: string;
  to: string;
  raw: Buffer;
}

/** Builds the mail's bytes (MIME, headers, attachments) with nodemailer's composer. */
export function composeMail(options: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return new MailComposer(options).compile().build();
}

const promised = <T>(run: (done: (err: Error | null, value?: T) => void) => void) =>
  new Promise<T>((resolve, reject) => run((err, value) => (err ? reject(err) : resolve(value as T))));

/**
 * Sends one mail over a new SMTP connection with nodemailer's SMTPConnection: connect (to the
 * address the core's policy resolved the host to, the certificate checked against the host name),
 * STARTTLS when offered, log in, then `beforeSend`, and only then MAIL FROM, RCPT TO and DATA. A
 * failure after `beforeSend` without a reply of the server is SmtpDropped (may have arrived).
 * Answers the server's reply to DATA.
 */
export async function sendMail(
  smtp: EmailConfig['smtp'],
  http: ProviderHttpOptions,
  mail: OutgoingMail,
  beforeSend?: () => Promise<void>,
): Promise<string> {
  const host = http.resolveHost ? await http.resolveHost(smtp.host) : smtp.host;
  const connection = new SMTPConnection({
    host,
    port: smtp.port,
    secure: smtp.secure,
    ...(isIP(smtp.host) === 0 ? { servername: smtp.host } : {}),
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
  });
  // A connection that fails outside a command (refused, dropped, timed out) reports it as an event
  // only, and the step under way never calls back: every step races it.
  const broken = new Promise<never>((_, reject) => {
    connection.once('error', reject);
    connection.once('end', () =>
      reject(Object.assign(new Error('the SMTP server closed the connection'), { code: 'ECONNECTION' })),
    );
  });
  broken.catch(() => {});
  const step = <T>(run: (done: (err: Error | null, value?: T) => void) => void) =>
    Promise.race([promised(run), broken]);
  let started = false;
  try {
    await step<void>((done) => connection.connect(() => done(null)));
    await step<boolean>((done) => connection.login({ user: smtp.user, pass: smtp.password }, done));
    await beforeSend?.();
    started = true;
    const info = await step<{ response?: string }>((done) =>
      connection.send({ from: mail.from, to: [mail.to] }, mail.raw, done),
    );
    return info.response ?? '';
  } catch (err) {
    const replied = typeof (err as { responseCode?: unknown }).responseCode === 'number';
    if (started && !replied) throw new SmtpDropped((err as Error).message, { cause: err });
    throw err;
  } finally {
    if (started) connection.quit();
    else connection.close();
  }
}
