import { isIP } from 'node:net';
import { ImapFlow } from 'imapflow';
import type { ParsedNotification } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { PollCursor, PolledBatch, WatchOptions } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { DEFAULT_MAX_MEDIA_BYTES } from '../provider-http.ts';
import type { EmailConfig } from './email.config.ts';
import { readMail, type MailPlace } from './email.read.ts';

/** Mails read and stored together (one transaction, one cursor step). */
const BATCH_MAILS = 20;

/** Where a mailbox's reading stands: its UIDVALIDITY and the last UID stored. */
interface MailboxCursor extends PollCursor {
  uidValidity: string;
  lastUid: number;
}

function cursorOf(value: PollCursor | null): MailboxCursor | null {
  return value && typeof value.uidValidity === 'string' && typeof value.lastUid === 'number'
    ? (value as MailboxCursor)
    : null;
}

const empty = (): ParsedNotification => ({ messages: [], statuses: [], contacts: [] });

/**
 * A channel's IMAP mailbox, read-only: new mail by UID from the last one stored (IDLE tells of new
 * mail when the server has it; else it is polled), and a stored mail again by its UID (for its
 * attachments). Nothing is deleted, moved or flagged.
 */
export class Mailbox {
  constructor(
    private readonly config: EmailConfig['imap'],
    private readonly account: string,
    private readonly http: ProviderHttpOptions,
  ) {}

  private get folder(): string {
    return this.config.mailbox ?? 'INBOX';
  }

  /** A logged-in connection to the server, at the address the core's policy resolved its name to. */
  private async connect(): Promise<ImapFlow> {
    const host = this.http.resolveHost ? await this.http.resolveHost(this.config.host) : this.config.host;
    const client = new ImapFlow({
      host,
      port: this.config.port,
      secure: this.config.secure,
      // TLS checks the certificate against the name configured, not the address connected to.
      ...(isIP(this.config.host) === 0 ? { servername: this.config.host } : {}),
      auth: { user: this.config.user, pass: this.config.password },
      logger: false,
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      // imapflow enters IDLE 15 s after the last command by default: mail arriving within those 15 s
      // after a read would wait for it. A quarter second keeps the wait after each read short.
      autoIdleDelay: 250,
    });
    // Errors after connecting surface as the failure of the command under way; the event only needs a listener.
    client.on('error', () => {});
    await client.connect();
    return client;
  }

  /**
   * Reads new mail into `store` until `signal` aborts. The first run, and a mailbox whose
   * UIDVALIDITY changed (recreated: its old UIDs name other mails now), start at the mailbox's next
   * UID, stored at once; after that, each batch's last UID is stored with its messages.
   */
  async watch(
    start: PollCursor | null,
    store: (batch: PolledBatch) => Promise<void>,
    { signal, intervalMs }: WatchOptions,
  ): Promise<void> {
    if (signal.aborted) return;
    const client = await this.connect();
    let pending: boolean;
    let wake: (() => void) | undefined;
    client.on('exists', () => {
      pending = true;
      wake?.();
    });
    const stop = () => {
      wake?.();
      client.close();
    };
    signal.addEventListener('abort', stop, { once: true });
    try {
      const box = await client.mailboxOpen(this.folder, { readOnly: true });
      const uidValidity = String(box.uidValidity);
      let cursor = cursorOf(start);
      if (!cursor || cursor.uidValidity !== uidValidity) {
        cursor = { uidValidity, lastUid: Math.max(0, box.uidNext - 1) };
        await store({ notification: empty(), cursor });
      }
      while (!signal.aborted) {
        pending = false;
        cursor = await this.readNew(client, cursor, store, signal);
        if (pending || signal.aborted) continue;
        // IDLE (imapflow enters it by itself while nothing else runs) ends the wait at once; the
        // interval is the poll of a server without it.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, intervalMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      signal.removeEventListener('abort', stop);
      if (!signal.aborted) await client.logout().catch(() => client.close());
    }
  }

  /** The mails after the cursor, a batch at a time, each batch stored with its last UID. */
  private async readNew(
    client: ImapFlow,
    cursor: MailboxCursor,
    store: (batch: PolledBatch) => Promise<void>,
    signal: AbortSignal,
  ): Promise<MailboxCursor> {
    let current = cursor;
    for (;;) {
      const found = await client.search({ uid: `${current.lastUid + 1}:*` }, { uid: true });
      // `n:*` names the last mail even when its UID is below n: only later UIDs are new.
      const uids = (Array.isArray(found) ? found : []).filter((uid) => uid > current.lastUid).sort((a, b) => a - b);
      if (uids.length === 0 || signal.aborted) return current;
      const batch = uids.slice(0, BATCH_MAILS);
      const notification = empty();
      // A mail is read up to the media limit (a larger one is cut there: its last attachment is lost).
      const source = { start: 0, maxLength: this.http.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES };
      for await (const mail of client.fetch(batch.join(','), { uid: true, source }, { uid: true })) {
        if (!mail.source) continue;
        const place = { uidValidity: current.uidValidity, uid: mail.uid };
        // A mail mailparser cannot read at all is passed over: reading it again would fail again, and
        // hold back every mail after it.
        const read = await readMail(mail.source, this.account, place).catch(() => undefined);
        notification.messages.push(...(read?.messages ?? []));
        notification.statuses.push(...(read?.statuses ?? []));
      }
      current = { uidValidity: current.uidValidity, lastUid: batch[batch.length - 1] };
      await store({ notification, cursor: current });
    }
  }

  /** The source of a stored mail; final when the mailbox was recreated or the mail is gone. */
  async source(place: MailPlace): Promise<Buffer> {
    const client = await this.connect();
    try {
      const box = await client.mailboxOpen(this.folder, { readOnly: true });
      if (String(box.uidValidity) !== place.uidValidity)
        throw new ProviderError('mail_gone', 'the mailbox was recreated since the mail was read', false);
      const mail = await client.fetchOne(String(place.uid), { uid: true, source: true }, { uid: true });
      if (!mail || !mail.source) throw new ProviderError('mail_gone', 'the mail is no longer in the mailbox', false);
      return mail.source;
    } finally {
      await client.logout().catch(() => client.close());
    }
  }
}
