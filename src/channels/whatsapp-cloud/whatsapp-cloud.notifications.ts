import type {
  ContactProfile,
  InboundMessage,
  ParsedNotification,
  ProviderDeliveryStatus,
  ProviderErrorDetail,
  StatusUpdate,
} from '../channel.types.ts';
import type { WebhookNotification } from '../channel-kind.ts';
import { ProviderError } from '../provider-error.ts';
import { array, identifier, isoFromUnixSeconds, num, object, str, type Json } from '../meta/meta.read.ts';
import { parseContent } from './whatsapp-cloud.inbound-content.ts';

const deliveryStatuses = new Set<string>(['sent', 'delivered', 'read', 'failed']);

/** The `phone_number_id`s a notification is addressed to: the route finds its channels by them. */
export function notificationPhoneNumberIds(body: unknown): string[] {
  return readWhatsAppNotification(body).accounts;
}

/** Parse a Meta `whatsapp_business_account` notification into neutral messages and receipts. */
export function parseWhatsAppNotification(body: unknown): ParsedNotification {
  return readWhatsAppNotification(body).notification;
}

/** One walk of a notification: the `phone_number_id`s it is addressed to, and its messages and receipts. */
export function readWhatsAppNotification(body: unknown): WebhookNotification {
  const result: ParsedNotification = { messages: [], statuses: [], contacts: [] };
  const accounts = new Set<string>();
  for (const value of changeValues(body)) {
    const phoneNumberId = str(object(value.metadata)?.phone_number_id);
    if (!phoneNumberId) continue;
    accounts.add(phoneNumberId);
    const profiles = new Map<string, string>();
    for (const contact of array(value.contacts)) {
      const waId = identifier(contact.wa_id);
      const name = str(object(contact.profile)?.name);
      if (waId && name) profiles.set(waId, name);
    }
    for (const [address, name] of profiles) result.contacts.push({ address, name } satisfies ContactProfile);
    for (const raw of array(value.messages)) {
      const message = parseMessage(raw, phoneNumberId, profiles);
      if (message) result.messages.push(message);
    }
    for (const raw of array(value.statuses)) {
      const status = parseStatus(raw, phoneNumberId);
      if (status) result.statuses.push(status);
    }
  }
  return { accounts: [...accounts], notification: result };
}

function changeValues(body: unknown): Json[] {
  const root = object(body);
  if (!root || root.object !== 'whatsapp_business_account' || !Array.isArray(root.entry)) {
    throw new ProviderError('invalid_notification', 'not a WhatsApp Business Account notification', false);
  }
  const values: Json[] = [];
  for (const entry of array(root.entry)) {
    for (const change of array(entry.changes)) {
      const value = object(change.value);
      // Other fields (account_update, message_template_status_update, ...) are not messages.
      if (change.field === 'messages' && value) values.push(value);
    }
  }
  return values;
}

function parseMessage(raw: Json, to: string, profiles: Map<string, string>): InboundMessage | null {
  const id = identifier(raw.id);
  const from = identifier(raw.from);
  const timestamp = isoFromUnixSeconds(raw.timestamp);
  const providerType = str(raw.type);
  if (!id || !from || !timestamp || !providerType) return null;
  const context = object(raw.context);
  return {
    providerMessageId: id,
    from,
    profileName: profiles.get(from) ?? null,
    to,
    timestamp,
    providerType,
    ...parseContent(raw, providerType),
    context: context
      ? {
          replyToProviderMessageId: str(context.id),
          replyToFrom: str(context.from),
          forwarded: context.forwarded === true || context.frequently_forwarded === true,
          frequentlyForwarded: context.frequently_forwarded === true,
        }
      : null,
    errors: parseErrors(raw.errors),
  };
}

function parseStatus(raw: Json, from: string): StatusUpdate | null {
  const id = identifier(raw.id);
  const status = str(raw.status);
  const timestamp = isoFromUnixSeconds(raw.timestamp);
  if (!id || !status || !deliveryStatuses.has(status) || !timestamp) return null;
  const reference = str(raw.biz_opaque_callback_data);
  return {
    providerMessageId: id,
    status: status as ProviderDeliveryStatus,
    timestamp,
    recipient: str(raw.recipient_id) ?? '',
    from,
    errors: parseErrors(raw.errors),
    ...(reference ? { reference } : {}),
  };
}

/** Meta's error objects in receipts and unsupported messages. */
export function parseErrors(value: unknown): ProviderErrorDetail[] {
  return array(value).map((error) => ({
    code: String(num(error.code) ?? str(error.code) ?? 'unknown'),
    title: str(error.title),
    message: str(error.message),
    details: str(object(error.error_data)?.details),
  }));
}
