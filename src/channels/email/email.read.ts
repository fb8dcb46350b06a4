import { createHash } from 'node:crypto';
import EmailReplyParser from 'email-reply-parser';
import { convert as htmlToText } from 'html-to-text';
import { simpleParser, type Attachment, type HeaderValue, type ParsedMail } from 'mailparser';
import type { InboundMessage, MediaKind, ProviderErrorDetail, StatusUpdate } from '../channel.types.ts';

/** The largest text kept of one mail (a message's stored text, the quoted history with it). */
const MAX_TEXT = 64 * 1024;

/** Where a mail was read: the mailbox's UIDVALIDITY and the mail's UID (its attachments' media ids name both). */
export interface MailPlace {
  uidValidity: string;
  uid: number;
}

/** What one mail is, read: messages to store (the text, then one per attachment), or a bounce's receipt, or nothing. */
export interface ReadMail {
  messages: InboundMessage[];
  statuses: StatusUpdate[];
}

const iso = (date: Date) => date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** An attachment's media id: the mail's place and the attachment's position (email.mailbox.ts fetches it by them). */
export const mediaIdOf = (place: MailPlace, index: number) => `${place.uidValidity}:${place.uid}:${index}`;

/** The place and position a media id names, or undefined when it is not one of ours. */
export function parseMediaId(id: string): { place: MailPlace; index: number } | undefined {
  const match = /^(\d+):(\d+):(\d+)$/.exec(id);
  if (!match) return undefined;
  return { place: { uidValidity: match[1], uid: Number(match[2]) }, index: Number(match[3]) };
}

/** The mail as mailparser reads it, keeping a DSN's delivery-status part as an attachment. */
export const parseMail = (source: Buffer) => simpleParser(source, { keepDeliveryStatus: true });

/**
 * A mail read from the mailbox of `account`: a delivery status notification (multipart/report,
 * report-type=delivery-status) whose action is `failed` is a receipt failing the mail it quotes (by
 * its Message-ID), and nothing is stored of it; any other mail is a text message, then one message
 * per attachment (inline images too), all from its sender.
 *
 * The text shown is the new part of a reply: email-reply-parser drops the quoted history ("On ...
 * wrote:" and the `>` lines under it) and the signature (below "-- "); the whole text is kept as
 * `fullText`. An HTML-only mail's text is its HTML as plain text (html-to-text).
 */
export async function readMail(source: Buffer, account: string, place: MailPlace): Promise<ReadMail> {
  const mail = await parseMail(source);
  const when = iso(mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date : new Date());
  const bounce = deliveryFailure(mail, account, when);
  if (bounce) return { messages: [], statuses: [bounce] };
  if (isDeliveryReport(mail)) return { messages: [], statuses: [] };

  const sender = mail.from?.value[0];
  const from = sender?.address?.trim() ?? '';
  const providerMessageId = mail.messageId ?? `<${place.uid}.${place.uidValidity}@${account.split('@')[1]}>`;
  const fullText = bodyText(mail).slice(0, MAX_TEXT);
  const visible = newPart(fullText);
  const references = referencesOf(mail);
  const common = {
    from,
    profileName: sender?.name?.trim() || null,
    to: account,
    timestamp: when,
    location: null,
    contacts: [],
    interactive: null,
    button: null,
    reaction: null,
    errors: [],
    subject: mail.subject ?? null,
    references,
    ...(isAutomated(mail) ? { automated: true } : {}),
  };
  const replyTo = mail.inReplyTo?.trim() || references.at(-1) || null;
  const text: InboundMessage = {
    ...common,
    providerMessageId,
    type: 'text',
    providerType: 'email',
    text: visible,
    media: null,
    context: replyTo
      ? { replyToProviderMessageId: replyTo, replyToFrom: null, forwarded: false, frequentlyForwarded: false }
      : null,
    ...(visible !== fullText ? { fullText } : {}),
  };
  const attachments = mail.attachments.map((a, index) => ({ a, index }));
  const media = attachments.map(({ a, index }): InboundMessage => ({
    ...common,
    providerMessageId: `${providerMessageId}#${index + 1}`,
    type: mediaKindOf(a.contentType),
    providerType: 'email_attachment',
    text: null,
    media: {
      providerMediaId: mediaIdOf(place, index),
      mimeType: a.contentType,
      sha256: createHash('sha256').update(a.content).digest('hex'),
      filename: a.filename ?? null,
      caption: null,
    },
    context: null,
  }));
  // A mail of attachments alone is its attachments; a mail with text, or nothing at all, is its text first.
  return { messages: visible !== '' || media.length === 0 ? [text, ...media] : media, statuses: [] };
}

/** The attachment at `index` of a mail's source (as readMail numbered them). */
export async function attachmentOf(source: Buffer, index: number): Promise<Attachment | undefined> {
  return (await parseMail(source)).attachments[index];
}

/** The text part, else the HTML part as plain text. */
function bodyText(mail: ParsedMail): string {
  if (typeof mail.text === 'string' && mail.text.trim() !== '') return mail.text.trim();
  if (typeof mail.html === 'string') return htmlToText(mail.html, { wordwrap: false }).trim();
  return '';
}

/** The new part of a reply (above the quoted history and the signature); the whole text when that leaves nothing. */
function newPart(text: string): string {
  if (text === '') return '';
  const visible = new EmailReplyParser().read(text).getVisibleText().trim();
  return visible === '' ? text : visible;
}

/** The Message-IDs of References (and In-Reply-To when References leave it out), oldest first, bounded. */
function referencesOf(mail: ParsedMail): string[] {
  const listed = typeof mail.references === 'string' ? mail.references.split(/\s+/) : (mail.references ?? []);
  const ids = listed.map((r) => r.trim()).filter((r) => r !== '');
  if (mail.inReplyTo && !ids.includes(mail.inReplyTo.trim())) ids.push(mail.inReplyTo.trim());
  return ids.slice(-20);
}

function mediaKindOf(contentType: string): MediaKind {
  const type = contentType.split('/')[0]?.toLowerCase();
  return type === 'image' || type === 'audio' || type === 'video' ? type : 'document';
}

const headerText = (value: HeaderValue | undefined): string => {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && 'value' in value && typeof value.value === 'string')
    return value.value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
};

/**
 * Sent by a machine: Auto-Submitted other than `no` (RFC 3834), X-Autoreply or X-Autorespond
 * (older responders), Precedence auto_reply, bulk or junk.
 */
export function isAutomated(mail: ParsedMail): boolean {
  const autoSubmitted = headerText(mail.headers.get('auto-submitted')).trim().toLowerCase();
  if (autoSubmitted !== '' && autoSubmitted !== 'no') return true;
  if (mail.headers.has('x-autoreply') || mail.headers.has('x-autorespond')) return true;
  const precedence = headerText(mail.headers.get('precedence')).trim().toLowerCase();
  return ['auto_reply', 'bulk', 'junk'].includes(precedence);
}

function isDeliveryReport(mail: ParsedMail): boolean {
  const type = mail.headers.get('content-type');
  if (typeof type !== 'object' || type === null || !('value' in type)) return false;
  const params = (type as { params?: Record<string, string> }).params ?? {};
  return (
    headerText(type).toLowerCase() === 'multipart/report' && params['report-type']?.toLowerCase() === 'delivery-status'
  );
}

/**
 * A DSN reporting a failed delivery (RFC 3464): a receipt `failed` for the mail it quotes (the
 * Message-ID of its message/rfc822 or text/rfc822-headers part), with the status and diagnostic.
 * Delayed or relayed reports are not failures.
 */
function deliveryFailure(mail: ParsedMail, account: string, when: string): StatusUpdate | undefined {
  if (!isDeliveryReport(mail)) return undefined;
  const status = mail.attachments.find((a) => a.contentType.toLowerCase() === 'message/delivery-status');
  const report = status?.content.toString('utf8') ?? '';
  if (!/^action:\s*failed\b/im.test(report)) return undefined;
  const original = mail.attachments.find((a) =>
    ['message/rfc822', 'text/rfc822-headers'].includes(a.contentType.toLowerCase()),
  );
  const quoted = /^message-id:\s*(<[^>\r\n]+>)/im.exec(original?.content.toString('utf8') ?? '')?.[1];
  if (!quoted) return undefined;
  const recipient = /^final-recipient:\s*[^;]*;\s*(\S+)/im.exec(report)?.[1] ?? '';
  const code = /^status:\s*([245]\.\d{1,3}\.\d{1,3})/im.exec(report)?.[1] ?? 'bounce';
  const diagnostic = /^diagnostic-code:\s*(.+(?:\r?\n[ \t].+)*)/im.exec(report)?.[1]?.replace(/\s+/g, ' ') ?? null;
  const error: ProviderErrorDetail = { code, title: 'bounced', message: diagnostic, details: null };
  return { providerMessageId: quoted, status: 'failed', timestamp: when, recipient, from: account, errors: [error] };
}
