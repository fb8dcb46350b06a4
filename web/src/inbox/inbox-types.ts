import type { paths } from '../api/schema';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;

export type InboxPage = Json<paths['/dashboard/api/conversations']['get']['responses'][200]>;
export type InboxConversation = InboxPage['conversations'][number];
export type InboxQuery = NonNullable<paths['/dashboard/api/conversations']['get']['parameters']['query']>;
export type ConversationDetail = Json<paths['/dashboard/api/conversations/{id}']['get']['responses'][200]>;
export type ThreadPage = Json<paths['/dashboard/api/conversations/{id}/thread']['get']['responses'][200]>;
export type ThreadItem = ThreadPage['items'][number];
export type ThreadMessage = Extract<ThreadItem, { kind: 'message' }>;
export type ThreadEvent = Extract<ThreadItem, { kind: 'event' }>;
export type Compose = Json<paths['/dashboard/api/conversations/{id}/compose']['get']['responses'][200]>;

export function contactName(contact: {
  first_name: string;
  last_name: string;
  phone_number: string | null;
  email: string | null;
}): string {
  return (
    `${contact.first_name} ${contact.last_name}`.trim() || contact.phone_number || contact.email || 'Unknown contact'
  );
}

/** What a message shows in a one-line preview when it has no text. */
export function preview(message: { type: string; text: string }): string {
  return message.text || `[${message.type}]`;
}

export const time = (iso: string) =>
  new Date(iso).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });

/** A UUID for a reply's Idempotency-Key; crypto.randomUUID needs a secure context, getRandomValues does not. */
export function newKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
