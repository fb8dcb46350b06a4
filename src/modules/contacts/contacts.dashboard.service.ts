import type { Db } from '../../db/database.ts';
import { CursorCodec } from '../../http/cursor.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { normalisePhone } from '../../lib/phone.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import { contactFieldsRepository } from '../contact-fields/contact-fields.repository.ts';
import { conversationsRepository } from '../conversations/conversations.repository.ts';
import { eventsRepository } from '../events/events.repository.ts';
import { mediaRepository } from '../media/media.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { usersRepository } from '../users/users.repository.ts';
import { contactsRepository, historyIds, type ContactRow } from './contacts.repository.ts';
import { contactIdentitiesRepository } from './contact-identities.repository.ts';
import {
  CONVERSATIONS_SHOWN,
  DEFINITIONS_SHOWN,
  type ContactListQuery,
  type ContactProfile,
  type ContactSummary,
} from './contacts.dashboard-schemas.ts';
import type { SearchQuery } from './contacts.schemas.ts';
import type { ContactsService } from './contacts.service.ts';

const fullName = (row: ContactRow) => `${row.first_name} ${row.last_name}`.trim();

function toSummary(row: ContactRow): ContactSummary {
  return {
    id: row.id,
    name: fullName(row),
    email: row.email,
    phone_number: row.phone_number,
    external_id: row.external_id,
    tags: row.tags,
    created_at: row.created_at,
  };
}

/**
 * What one search box may mean: an email when it has an @, a phone when it reads as one, and always
 * an external id. The search itself is the public API's (ContactsService.search), which finds a
 * contact by any of them.
 */
export function searchOfText(text: string): SearchQuery {
  const q = text.trim();
  if (q === '') throw invalid('q is empty', [{ path: '/q' }]);
  const query: SearchQuery = { external_id: q };
  if (q.includes('@')) query.email = q;
  else if (normalisePhone(q)) query.phone = q;
  return query;
}

/**
 * The contacts a search of the inbox names: `ids`, and when a name prefix is too common to list its
 * contacts, `namePrefix` too, for the caller to test on each contact (contactsRepository.nameStartsWith).
 */
export interface ContactMatch {
  ids: string[];
  namePrefix?: string;
}

/** The dashboard's reads of contacts: the paged list and its search box, a contact's page, what a deletion removes. */
export class DashboardContactsService {
  private readonly cursors: CursorCodec;

  constructor(
    private readonly db: Db,
    secretKeys: SecretKeys,
    private readonly contacts: ContactsService,
  ) {
    this.cursors = new CursorCodec(secretKeys);
  }

  /**
   * The contacts the inbox's search box names: those the contacts list's search box finds (an email,
   * a phone or an external id, by the rules of GET /external/v2/contacts), and unless the text is an
   * email or a phone, those whose full name or last name starts with it, in any case; at most `limit`
   * by name, else the prefix is answered instead of them.
   */
  async matching(businessId: string, text: string, limit: number): Promise<ContactMatch> {
    const words = text.trim().replace(/\s+/g, ' ');
    const search = searchOfText(words);
    const ids = (await this.contacts.searchRows(businessId, search)).map((r) => r.id);
    if (search.email !== undefined || search.phone !== undefined) return { ids };
    const named = await contactsRepository.idsByNamePrefix(this.db, businessId, words, limit + 1);
    if (named.length > limit) return { ids, namePrefix: words };
    return { ids: [...new Set([...ids, ...named])] };
  }

  /** Newest first, paged by a signed keyset cursor; with `q`, the contacts it identifies. */
  async list(businessId: string, query: ContactListQuery) {
    if (query.q !== undefined) {
      if (query.cursor !== undefined) throw invalid('a search has one page: send q or cursor, not both');
      const rows = await this.contacts.searchRows(businessId, searchOfText(query.q));
      return { contacts: rows.map(toSummary), next_cursor: null };
    }
    const limit = query.limit ?? 25;
    const scope = CursorCodec.scope({ what: 'dashboard-contacts', businessId });
    const after = query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, scope);
    const rows = await contactsRepository.page(this.db, businessId, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      contacts: page.map(toSummary),
      next_cursor: rows.length > limit ? this.cursors.encode({ createdAt: last.created_at, id: last.id }, scope) : null,
    };
  }

  /** The contact with its custom fields by their definitions, aliases, assignee and latest conversations. */
  async profile(businessId: string, id: string): Promise<ContactProfile> {
    const row = await contactsRepository.find(this.db, businessId, id);
    if (!row) throw notFound('contact');
    const [definitions, aliases, addresses, conversations, conversationCount, assignee] = await Promise.all([
      contactFieldsRepository.list(this.db, businessId, DEFINITIONS_SHOWN),
      contactsRepository.aliasesOf(this.db, businessId, id),
      contactIdentitiesRepository.channelAddresses(this.db, businessId, [id]),
      conversationsRepository.latestOfContact(this.db, businessId, id, CONVERSATIONS_SHOWN),
      conversationsRepository.countOfContact(this.db, businessId, id),
      row.assigned_user_id ? usersRepository.find(this.db, businessId, row.assigned_user_id) : undefined,
    ]);
    const values = row.custom_fields;
    const defined = new Set(definitions.map((d) => d.key));
    return {
      contact: {
        id: row.id,
        name: fullName(row),
        first_name: row.first_name,
        last_name: row.last_name,
        email: row.email,
        phone_number: row.phone_number,
        external_id: row.external_id,
        avatar_url: row.avatar_url,
        source: row.source,
        assigned_user: assignee?.email ?? null,
        is_test: row.is_test,
        tags: row.tags,
        created_at: row.created_at,
        updated_at: row.updated_at,
      },
      custom_fields: [
        ...definitions.map((d) => ({ key: d.key, name: d.name, value: values[d.key] ?? null })),
        ...Object.keys(values)
          .filter((key) => !defined.has(key))
          .sort()
          .map((key) => ({ key, name: null, value: values[key] })),
      ],
      aliases,
      identities: addresses.get(id) ?? [],
      conversations,
      conversation_count: conversationCount,
    };
  }

  /**
   * What deleting the contact removes with it: its conversations, messages, events and their
   * attachments, those of the contacts merged into it whose move has not ended included.
   */
  async deletion(businessId: string, id: string) {
    const row = await contactsRepository.findWithMerged(this.db, businessId, id);
    if (!row) throw notFound('contact');
    const ids = historyIds(row);
    const [conversations, messages, events, media] = await Promise.all([
      conversationsRepository.countOfContact(this.db, businessId, id),
      messagesRepository.countOfContact(this.db, businessId, ids),
      eventsRepository.countOfContact(this.db, businessId, ids),
      mediaRepository.countOfContact(this.db, businessId, ids),
    ]);
    return { contact_id: id, conversations, messages, events, media };
  }
}
