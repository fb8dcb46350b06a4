import type { AddressIdentity } from './contact-identity.ts';
import type { DashboardLinks } from '../../lib/links.ts';
import type { ContactRow, ConversationSummary } from './contacts.repository.ts';
import type { ContactCamelForm, ContactSnakeForm } from './contacts.schemas.ts';

/** Snake_case form (search, create, read), with the addresses channels know the contact by besides its columns. */
export function toContactSnake(row: ContactRow, identities: AddressIdentity[]): ContactSnakeForm {
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    phone_number: row.phone_number,
    external_id: row.external_id,
    identities: identities.map(({ kind, value }) => ({ kind, value })),
    created_at: row.created_at,
  };
}

/** What the camelCase form needs besides the contact row. */
export interface ContactCamelContext {
  summary: ConversationSummary;
  assignedUserEmail: string | null;
  links: DashboardLinks;
}

/** camelCase form (update, close conversation, and the contact inside webhooks). */
export function toContactCamel(
  row: ContactRow,
  { summary, assignedUserEmail, links }: ContactCamelContext,
): ContactCamelForm {
  const href = links.contact(row.id);
  return {
    uuid: row.id,
    name: `${row.first_name} ${row.last_name}`.trim(),
    phoneNumber: row.phone_number ? `+${row.phone_number}` : null,
    avatarUrl: row.avatar_url,
    createdAt: row.created_at,
    source: row.source,
    closedAt: summary.closedAt,
    href,
    conversationHref: summary.latestConversationId ? links.conversation(summary.latestConversationId) : href,
    tags: row.tags,
    assignedUser: assignedUserEmail,
    customFields: row.custom_fields,
  };
}
