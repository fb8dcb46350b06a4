import type { InboundMedia, InboundMessage, ParsedNotification, StatusUpdate } from '../channel.types.ts';
import type { WebhookNotification } from '../channel-kind.ts';
import { emptyContent } from '../inbound-content.ts';
import { ProviderError } from '../provider-error.ts';
import { UNSUBSCRIBED_RECIPIENT } from '../twilio-common/twilio.errors.ts';
import { param, type FormParams } from '../twilio-common/twilio.form.ts';

/** Longest identifier or address read from a notification (Twilio's SIDs are 34 characters). */
const MAX_IDENTIFIER_LENGTH = 256;
/** Twilio attaches at most 10 media to one MMS. */
const MAX_MEDIA = 10;

/** The query parameter of a send's status callback URL that names the service's message. */
export const REFERENCE_PARAM = 'reference';

const receiptStatuses = new Map<string, StatusUpdate['status']>([
  ['sent', 'sent'],
  ['delivered', 'delivered'],
  ['read', 'read'],
  ['undelivered', 'failed'],
  ['failed', 'failed'],
]);

const mediaKindOf = (contentType: string | null): InboundMessage['type'] => {
  const major = contentType?.split('/')[0];
  if (major === 'image' || major === 'audio' || major === 'video') return major;
  return 'document';
};

/** Twilio does not say when it received a message: the time it reached us, with microseconds. */
const now = () => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

function identifier(params: FormParams, name: string): string | null {
  const value = param(params, name);
  return value !== null && value.length <= MAX_IDENTIFIER_LENGTH ? value : null;
}

/**
 * One Twilio webhook request, form parameters as posted: an incoming message (`SmsStatus`
 * `received`) addressed to the channel's number (`To`), or a status callback of a message the
 * channel sent (`MessageStatus`, from the channel's number, `From`). Statuses before `sent`
 * (queued, accepted, sending) move nothing and are read as no receipt.
 */
export function readTwilioNotification(body: unknown, query: Record<string, string> = {}): WebhookNotification {
  const params = body as FormParams;
  const sid = identifier(params, 'MessageSid') ?? identifier(params, 'SmsSid');
  const accountSid = param(params, 'AccountSid');
  const from = identifier(params, 'From');
  const to = identifier(params, 'To');
  if (!sid || !accountSid || !from || !to)
    throw new ProviderError('invalid_notification', 'not a Twilio message notification', false);
  const status = param(params, 'MessageStatus') ?? param(params, 'SmsStatus');
  const notification: ParsedNotification = { messages: [], statuses: [], contacts: [] };
  if (status === null || status === 'received') {
    notification.messages.push(...inboundMessages(params, sid, from, to));
    return { accounts: [to], notification };
  }
  const mapped = receiptStatuses.get(status);
  if (mapped) {
    const code = param(params, 'ErrorCode');
    notification.statuses.push({
      ...(code === String(UNSUBSCRIBED_RECIPIENT) ? { recipientOptedOut: true } : {}),
      // The send's status callback URL names its message (TwilioProvider.send), found by it even when
      // the send's answer was never recorded.
      ...(query[REFERENCE_PARAM] ? { reference: query[REFERENCE_PARAM] } : {}),
      providerMessageId: sid,
      status: mapped,
      timestamp: now(),
      recipient: to,
      from,
      errors: code
        ? [{ code, title: null, message: param(params, 'ErrorMessage'), details: null }]
        : mapped === 'failed'
          ? [{ code: status, title: null, message: `Twilio reported the message ${status}`, details: null }]
          : [],
    });
  }
  return { accounts: [from], notification };
}

/**
 * An SMS is one text message; an MMS one message per attachment (the first carries the text as its
 * caption), the later ones with ids derived from the MessageSid so a redelivery stores none twice.
 */
function inboundMessages(params: FormParams, sid: string, from: string, to: string): InboundMessage[] {
  const text = param(params, 'Body');
  // With Advanced Opt-Out, Twilio names the keyword's effect: STOP unsubscribes, START subscribes again.
  const optOutType = param(params, 'OptOutType')?.toUpperCase();
  const optOut: InboundMessage['optOut'] =
    optOutType === 'STOP' ? 'stop' : optOutType === 'START' ? 'start' : undefined;
  const base = {
    ...(optOut ? { optOut } : {}),
    from,
    profileName: param(params, 'ProfileName'),
    to,
    timestamp: now(),
    context: null,
    errors: [],
  };
  const count = Math.min(MAX_MEDIA, Math.max(0, Number.parseInt(param(params, 'NumMedia') ?? '0', 10) || 0));
  const media: { url: string; contentType: string | null }[] = [];
  for (let n = 0; n < count; n++) {
    const url = param(params, `MediaUrl${n}`);
    if (url && /^https?:\/\//.test(url) && url.length <= 2048)
      media.push({ url, contentType: param(params, `MediaContentType${n}`) });
  }
  if (media.length === 0) {
    return [{ ...base, ...emptyContent('text'), providerMessageId: sid, providerType: 'sms', text: text ?? '' }];
  }
  return media.map(({ url, contentType }, n) => {
    const caption = n === 0 ? text : null;
    const inbound: InboundMedia = {
      providerMediaId: url,
      mimeType: contentType,
      sha256: null,
      filename: null,
      caption,
    };
    return {
      ...base,
      ...emptyContent(mediaKindOf(contentType)),
      providerMessageId: n === 0 ? sid : `${sid}/${n}`,
      providerType: 'mms',
      text: caption,
      media: inbound,
    };
  });
}
