import type { WebhookNotification } from '../channel-kind.ts';
import type { RelayedReply } from '../channel.types.ts';
import { ProviderError } from '../provider-error.ts';

/** The one webhook event of a custom channel the service acts on: a reply written in HubSpot's inbox. */
const OUTGOING = 'OUTGOING_CHANNEL_MESSAGE_CREATED';

/** Longest reply relayed: the channels it goes out through take far less. */
const MAX_TEXT = 65_536;

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
  // A reply of attachments alone has no text to send: it is signed and accepted, and relays nothing.
  const relayed: RelayedReply[] = reply.trim() === '' ? [] : [{ account, conversationId, text: reply, key: id }];
  return { ...empty, accounts: [account], relayed };
}
