import type { WebhookNotification } from '../channel-kind.ts';
import type { RelayedFile, RelayedReply } from '../channel.types.ts';
import { ProviderError } from '../provider-error.ts';

/** The one webhook event of a custom channel the service acts on: a reply written in HubSpot's inbox. */
const OUTGOING = 'OUTGOING_CHANNEL_MESSAGE_CREATED';

/** Longest reply relayed: the channels it goes out through take far less. */
const MAX_TEXT = 65_536;

/** Most files of one reply relayed: a bound on the downloads one webhook request waits for. */
const MAX_FILES = 10;

const fail = (why: string) => new ProviderError('invalid_notification', why, false);
const record = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * A custom channel's webhook body: a reply a HubSpot user wrote in a thread the service published
 * (`OUTGOING_CHANNEL_MESSAGE_CREATED`), relayed to the conversation its thread names
 * (`channelIntegrationThreadIds`, the conversation ids the service published under). Other event
 * types carry nothing to relay and are accepted as empty; a body that is no HubSpot event is refused.
 */
export function readHubSpotNotification(body: unknown): WebhookNotification {
  const event = record(body);
  const type = text(event?.type);
  if (!event || !type) throw fail('not a HubSpot custom channel event');
  const empty: WebhookNotification = { accounts: [], notification: { messages: [], statuses: [], contacts: [] } };
  if (type !== OUTGOING) return empty;
  const message = record(event.message);
  const account = text(message?.channelAccountId);
  const id = text(message?.id);
  if (!message || !account || !id) throw fail('the event carries no message with its id and channel account');
  if (message.direction !== undefined && message.direction !== 'OUTGOING') return empty;
  const threads = Array.isArray(event.channelIntegrationThreadIds) ? event.channelIntegrationThreadIds : [];
  const conversationId = threads.find((t): t is string => typeof t === 'string' && t !== '');
  const reply = typeof message.text === 'string' ? message.text : '';
  if (!conversationId) throw fail('the event names no integration thread');
  if (reply.length > MAX_TEXT) throw fail('the message is too long to relay');
  const files = filesOf(message.attachments);
  // A reply with neither text nor files has nothing to send: it is signed and accepted, and relays nothing.
  const relayed: RelayedReply[] =
    reply.trim() === '' && files.length === 0
      ? []
      : [
          {
            account,
            conversationId,
            text: reply.trim() === '' ? '' : reply,
            key: id,
            ...(files.length ? { files } : {}),
          },
        ];
  return { ...empty, accounts: [account], relayed };
}

/**
 * The message's files (`attachments` of type FILE, each with its `fileId`); attachments of other
 * types (quick replies, say) carry nothing to send. A FILE without its id is refused: what it was
 * cannot be known, and sending the rest would pass for the whole reply.
 */
function filesOf(attachments: unknown): RelayedFile[] {
  if (attachments === undefined || attachments === null) return [];
  if (!Array.isArray(attachments)) throw fail('the message attachments are not a list');
  const files: RelayedFile[] = [];
  for (const item of attachments) {
    const attachment = record(item);
    if (attachment?.type !== 'FILE') continue;
    const ref = typeof attachment.fileId === 'number' ? String(attachment.fileId) : text(attachment.fileId);
    if (!ref) throw fail('an attachment of the message names no file (fileId)');
    files.push({ ref, filename: text(attachment.name) ?? null });
  }
  if (files.length > MAX_FILES) throw fail(`the message has more than ${MAX_FILES} files`);
  return files;
}
