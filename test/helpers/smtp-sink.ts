import { SMTPServer } from 'smtp-server';

/** One mail an SMTP sink accepted. */
export interface SunkMail {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP server on loopback (the smtp-server package) that keeps what it is sent. */
export interface SmtpSink {
  port: number;
  mails: SunkMail[];
  /** Logins it was given (user and password), to check what the adapter sent. */
  logins: { user: string; password: string }[];
  /** Recipients refused so far, in order. */
  refused: string[];
  /** The next mails to this recipient are refused at RCPT TO with this reply code (451, 550). */
  refuse(recipient: string, code: number): void;
  close(): Promise<void>;
}

/** Starts an SMTP server that takes any login, no TLS, and refuses the recipients it is told to. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const mails: SunkMail[] = [];
  const logins: SmtpSink['logins'] = [];
  const refusals = new Map<string, number>();
  const refused: string[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      logins.push({ user: auth.username ?? '', password: auth.password ?? '' });
      callback(null, { user: auth.username });
    },
    onRcptTo(address, _session, callback) {
      const code = refusals.get(address.address.toLowerCase());
      if (code) refused.push(address.address);
      if (code) return callback(Object.assign(new Error(`refused ${address.address}`), { responseCode: code }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    mails,
    logins,
    refused,
    refuse: (recipient, code) => refusals.set(recipient.toLowerCase(), code),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
