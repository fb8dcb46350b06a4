import { randomUUID } from 'node:crypto';
import type { ErrorClassification, FetchedMedia, OutboundContent, SendRequest, SendResult } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import type { ChannelProvider, PollCursor, PolledBatch, WatchOptions } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { downloadSentFile } from '../provider-http.ts';
import { DEFAULT_SUBJECT, type EmailConfig } from './email.config.ts';
import { classifyEmailError } from './email.errors.ts';
import { Mailbox } from './email.mailbox.ts';
import { attachmentOf, parseMediaId } from './email.read.ts';
import { composeMail, sendMail } from './email.smtp.ts';

/** A reply's subject: the one it answers, with one "Re: " before it. */
export const replySubject = (subject: string) =>
  /^re:/i.test(subject.trim()) ? subject.trim() : `Re: ${subject.trim()}`;

/**
 * A mailbox behind the channel provider interface: sends by SMTP (nodemailer), each mail with a
 * Message-ID of its own (the service's message id at the address's domain: the provider message id,
 * by which a bounce finds it) and, in a conversation, In-Reply-To and References to the latest mail
 * received; reads the mailbox by IMAP (imapflow), see Mailbox.
 */
export class EmailProvider implements ChannelProvider {
  readonly kind = 'email';
  private readonly mailbox: Mailbox;

  constructor(
    private readonly config: EmailConfig,
    private readonly http: ProviderHttpOptions = {},
  ) {
    this.mailbox = new Mailbox(config.imap, config.address, http);
  }

  async send(request: SendRequest): Promise<SendResult> {
    const { content, thread } = request;
    if (content.kind === 'template') throw new ProviderError('unsupported_content', 'email has no templates', false);
    const domain = this.config.address.split('@')[1];
    const messageId = `<${request.reference ?? randomUUID()}@${domain}>`;
    // An attachment's message is its mail's Message-ID and `#n` (email.read.ts): the reply names the mail.
    const replyTo = thread?.replyToProviderMessageId.replace(/#\d+$/, '');
    const raw = await composeMail({
      from: this.config.address,
      to: request.to,
      subject: thread?.subject ? replySubject(thread.subject) : (this.config.default_subject ?? DEFAULT_SUBJECT),
      messageId,
      date: new Date(),
      text: content.kind === 'text' ? content.text : (content.caption ?? ''),
      ...(replyTo
        ? { inReplyTo: replyTo, references: [...(thread?.references ?? []).filter((r) => r !== replyTo), replyTo] }
        : {}),
      attachments: content.kind === 'media' ? [await this.attachment(content)] : [],
    });
    const response = await sendMail(
      this.config.smtp,
      this.http,
      { from: this.config.address, to: request.to, raw },
      request.beforeSend,
    );
    return { providerMessageId: messageId, ...(response ? { providerStatus: response.slice(0, 200) } : {}) };
  }

  /** A media send's file, downloaded through the core's dispatcher (address policy), bounded in size and time. */
  private async attachment(content: Extract<OutboundContent, { kind: 'media' }>) {
    const { bytes, contentType } = await downloadSentFile(content.url, this.http);
    const named =
      content.filename ?? decodeURIComponent(new URL(content.url).pathname.split('/').pop() || 'attachment');
    return { filename: named, content: bytes, ...(contentType ? { contentType } : {}) };
  }

  /** Mail comes in by IMAP (the poller), never by webhook. */
  verifySignature(): boolean {
    return false;
  }

  classifyError(err: unknown): ErrorClassification {
    return classifyEmailError(err);
  }

  /** An attachment of a mail read before, taken from the mail again (by its UID; the mailbox is never changed). */
  async fetchMedia(mediaId: string): Promise<FetchedMedia> {
    const named = parseMediaId(mediaId);
    if (!named) throw new ProviderError('invalid_media_id', 'not a media id of this mailbox', false);
    const attachment = await attachmentOf(await this.mailbox.source(named.place), named.index);
    if (!attachment) throw new ProviderError('mail_gone', 'the attachment is no longer in the mail', false);
    return { bytes: attachment.content, mimeType: attachment.contentType, fileSize: attachment.content.length };
  }

  watch(cursor: PollCursor | null, store: (batch: PolledBatch) => Promise<void>, options: WatchOptions): Promise<void> {
    return this.mailbox.watch(cursor, store, options);
  }
}
