import type { Db } from '../../db/database.ts';
import { notFound } from '../../lib/domain-errors.ts';
import { contactsRepository, historyIds, type ContactRow } from '../contacts/contacts.repository.ts';
import { messagesRepository, type ContactMessageRow } from './messages.repository.ts';
import type { MediaLink, MediaService } from '../media/media.service.ts';
import type { ContactMessage } from './messages.schemas.ts';
import { messageAddresses } from './message-addresses.ts';

/** Files of a message: signed download addresses (valid 120 minutes) and their descriptions. */
function filesOf(links: MediaLink[]): Pick<ContactMessage, 'attachments' | 'media'> {
  return {
    attachments: links.map((l) => l.url),
    media: links.map(({ id, url, filename, contentType }) => ({ id, url, filename, contentType })),
  };
}

function toContactMessage(row: ContactMessageRow, contact: ContactRow, links: MediaLink[]): ContactMessage {
  return {
    uuid: row.id,
    status: row.status === 'ERROR' ? 'failed' : row.direction === 'inbound' ? 'received' : 'sent',
    channel: row.channel,
    createdAt: row.created_at,
    ...messageAddresses(row, contact, row.channel_identifier),
    text: row.text,
    ...filesOf(links),
    metadata: row.metadata,
  };
}

export class MessagesService {
  constructor(
    private readonly db: Db,
    private readonly media: MediaService,
  ) {}

  /** The contact's latest messages in all its conversations (with those of contacts merged into it), newest first. */
  async listForContact(businessId: string, contactId: string, limit: number): Promise<ContactMessage[]> {
    const contact = await contactsRepository.findWithMerged(this.db, businessId, contactId);
    if (!contact) throw notFound('contact');
    const rows = await messagesRepository.latestOfContact(this.db, businessId, historyIds(contact), limit);
    const files = await this.media.forMessages(
      businessId,
      rows.map((r) => r.id),
    );
    return rows.map((row) => toContactMessage(row, contact, files.get(row.id) ?? []));
  }
}
