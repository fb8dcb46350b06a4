import parseJson from 'secure-json-parse';
import { storableText } from '../../lib/json-check.ts';
import type { InboundMessage, ParsedNotification } from '../channel.types.ts';
import type { WebhookNotification } from '../channel-kind.ts';
import { emptyContent } from '../inbound-content.ts';
import { ProviderError } from '../provider-error.ts';

// TikTok's Business Messaging webhook events: one event a request, `{event, user_openid, create_time,
// content}`, where `user_openid` is the business account's id and `content` a JSON string: the
// message (`conversation_id`, `message_id`, `type`, `timestamp` in ms, `from` and `from_user.id`,
// `to` and `to_user.id`, `text.body` or `image.media_id`, `referenced_message_info`) or, for a read,
// `read.last_read_timestamp`.

/** The customer wrote to the business. */
const RECEIVED = 'im_receive_msg';
/** The business account sent a message (from TikTok's app, another tool, or this service). */
const SENT = 'im_send_msg';
/** The customer read the conversation up to a time. */
const READ = 'im_mark_read_msg';

/** The longest id kept: longer ones are skipped rather than failing the event on every redelivery. */
const MAX_ID_LENGTH = 256;

type Json = Record<string, unknown>;

const object = (value: unknown): Json | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const id = (value: unknown): string | null => {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : str(value);
  return text !== null && text.length <= MAX_ID_LENGTH ? text : null;
};

/**
 * A TikTok time (Unix milliseconds; seconds when small) as ISO 8601 with microseconds, or null when
 * absent or out of range.
 */
export function isoFromTikTokTime(value: unknown): string | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < 0) return null;
  const ms = n < 1e11 ? n * 1000 : n;
  if (ms > 253402300799000) return null;
  return new Date(Math.trunc(ms)).toISOString().replace(/Z$/, '000Z');
}

/** The media id of an inbound image as fetchMedia takes it: the download names the conversation and message too. */
export function mediaRef(conversationId: string, messageId: string, mediaId: string): string {
  return new URLSearchParams({ conversation_id: conversationId, message_id: messageId, media_id: mediaId }).toString();
}

/** The parts of a media reference (mediaRef), or null when it is not one. */
export function readMediaRef(ref: string): { conversationId: string; messageId: string; mediaId: string } | null {
  const params = new URLSearchParams(ref);
  const conversationId = params.get('conversation_id');
  const messageId = params.get('message_id');
  const mediaId = params.get('media_id');
  return conversationId && messageId && mediaId ? { conversationId, messageId, mediaId } : null;
}

/**
 * Reads one event. The person is known by the conversation id (what sends name); an event of
 * another kind (a referral, say) is accepted and carries nothing. Throws ProviderError
 * `invalid_notification` when the body is not a TikTok event.
 */
export function readTikTokNotification(body: unknown): WebhookNotification {
  const root = object(body);
  const event = str(root?.event);
  const account = id(root?.user_openid);
  if (!root || !event || !account || typeof root.content !== 'string')
    throw new ProviderError('invalid_notification', 'not a TikTok webhook event', false);
  let content: Json | null;
  try {
    // Parsed as the core parses a body: a NUL or a lone surrogate, which PostgreSQL cannot store, is
    // dropped or replaced rather than refused (and redelivered by TikTok for days).
    content = object(
      parseJson(root.content, (_key, value: unknown) => (typeof value === 'string' ? storableText(value) : value), {
        protoAction: 'remove',
        constructorAction: 'remove',
      }),
    );
  } catch {
    content = null;
  }
  if (!content) throw new ProviderError('invalid_notification', 'the event content is not a JSON object', false);
  const result: ParsedNotification = { messages: [], statuses: [], contacts: [] };
  const conversation = id(content.conversation_id);
  if (conversation) {
    if (event === RECEIVED || event === SENT) {
      const message = messageOf(content, { account, conversation, echo: event === SENT, sentAt: root.create_time });
      if (message) result.messages.push(message);
    } else if (event === READ) {
      // The business reading its own conversation says nothing of the customer.
      const reader = id(object(content.from_user)?.id);
      const at = isoFromTikTokTime(object(content.read)?.last_read_timestamp ?? content.timestamp);
      if (at && reader !== account)
        result.statuses.push({
          providerMessageId: '',
          status: 'read',
          timestamp: at,
          recipient: conversation,
          from: account,
          errors: [],
          upTo: true,
        });
    }
  }
  const carries = result.messages.length + result.statuses.length > 0;
  return { accounts: carries ? [account] : [], notification: result };
}

interface Parties {
  account: string;
  conversation: string;
  echo: boolean;
  sentAt: unknown;
}

/** A text or an image; any other type (a shared post, a sticker) is stored as unsupported, with its link if any. */
function messageOf(content: Json, { account, conversation, echo, sentAt }: Parties): InboundMessage | null {
  const messageId = id(content.message_id);
  const timestamp = isoFromTikTokTime(content.timestamp) ?? isoFromTikTokTime(sentAt);
  if (!messageId || !timestamp) return null;
  const providerType = (str(content.type) ?? 'unknown').toLowerCase();
  const replyTo = id(object(content.referenced_message_info)?.referenced_message_id);
  const base: InboundMessage = {
    providerMessageId: messageId,
    from: conversation,
    // The customer's username names a new contact; an echo's sender is the business.
    profileName: echo ? null : str(content.from),
    to: account,
    timestamp,
    providerType,
    ...emptyContent('unsupported'),
    context: replyTo
      ? { replyToProviderMessageId: replyTo, replyToFrom: null, forwarded: false, frequentlyForwarded: false }
      : null,
    errors: [],
    ...(echo ? { echo: true } : {}),
  };
  if (providerType === 'text') {
    const text = typeof object(content.text)?.body === 'string' ? (object(content.text)!.body as string) : null;
    return text === null ? base : { ...base, type: 'text', text };
  }
  if (providerType === 'image') {
    const mediaId = id(object(content.image)?.media_id);
    if (!mediaId) return base;
    const media = {
      providerMediaId: mediaRef(conversation, messageId, mediaId),
      mimeType: null,
      sha256: null,
      filename: null,
      caption: null,
    };
    return { ...base, type: 'image', media };
  }
  const link = str(object(content.share_post)?.embed_url);
  return link ? { ...base, text: link } : base;
}
