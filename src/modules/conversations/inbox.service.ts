import type { Static } from 'typebox';
import { isChannelType } from '../../channels/channel-types.ts';
import type { Db } from '../../db/database.ts';
import { CursorCodec } from '../../http/cursor.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import type { SecretKeys } from '../../lib/secret-keys.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import type { DashboardContactsService } from '../contacts/contacts.dashboard.service.ts';
import { teamsRepository } from '../teams/teams.repository.ts';
import { usersRepository } from '../users/users.repository.ts';
import { conversationReadsRepository } from './conversation-reads.repository.ts';
import { inboxRepository, type InboxFilter, type InboxPosition, type InboxRow } from './inbox.repository.ts';
import type { ConversationDetail, InboxConversation, InboxQuery, ReadBody } from './inbox.schemas.ts';

/** Who looks at the inbox: the signed-in user of a dashboard session. */
export interface Viewer {
  userId: string;
}

/**
 * A search that names more contacts than this is run as a condition on each conversation's contact
 * instead of as a list of contacts (DashboardContactsService.matching).
 */
const SEARCH_CONTACTS = 1000;

const named = (id: string | null, name: string | null) => (id !== null && name !== null ? { id, name } : null);

function toInboxConversation(row: InboxRow): InboxConversation {
  return {
    id: row.id,
    contact: {
      id: row.contact_id,
      first_name: row.first_name,
      last_name: row.last_name,
      phone_number: row.phone_number,
      email: row.email,
    },
    channel: { type: row.channel, id: row.channel_id, name: row.channel_name },
    last_message:
      row.last_message_id === null
        ? null
        : {
            id: row.last_message_id,
            type: row.last_message_type!,
            text: row.last_message_text!,
            direction: row.last_message_direction!,
            status: row.last_message_status!,
            created_at: row.last_message_at!,
          },
    last_activity_at: row.activity_at,
    created_at: row.created_at,
    assignee: {
      user: named(row.assigned_user_id, row.user_name),
      team: named(row.team_id, row.team_name),
      agent: named(row.agent_id, row.agent_name),
    },
    manual_control: row.manual_control,
    manual_control_locked: row.manual_control_locked,
    closed: row.closed_at !== null,
    closed_at: row.closed_at,
    unread_count: row.unread_count,
  };
}

/**
 * The dashboard's inbox: the business's conversations as one user sees them (newest activity
 * first, filtered, with that user's unread counts), one conversation with its contact, and the
 * user's read positions. Reads only, but for the read position.
 */
export class InboxService {
  private readonly cursors: CursorCodec;

  constructor(
    private readonly db: Db,
    private readonly contacts: Pick<DashboardContactsService, 'matching'>,
    secretKeys: SecretKeys,
  ) {
    this.cursors = new CursorCodec(secretKeys);
  }

  /** One page of the inbox: `limit` conversations after the cursor's. */
  async list(businessId: string, viewer: Viewer, query: InboxQuery) {
    const scope = CursorCodec.scope({
      what: 'inbox',
      businessId,
      userId: viewer.userId,
      status: query.status ?? 'open',
      channel: query.channel,
      assignee: query.assignee,
      team: query.team,
      control: query.control,
      q: query.q,
    });
    const at = query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, scope);
    const after: InboxPosition | undefined = at && { activityAt: at.createdAt, id: at.id };
    const filter = await this.filterOf(businessId, viewer, query);
    if (filter.contactIds?.length === 0 && filter.namePrefix === undefined)
      return { conversations: [], next_cursor: null };
    const rows = await inboxRepository.page(this.db, businessId, viewer.userId, filter, after, query.limit + 1);
    const more = rows.length > query.limit;
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      conversations: page.map(toInboxConversation),
      next_cursor: more ? this.cursors.encode({ createdAt: last.activity_at, id: last.id }, scope) : null,
    };
  }

  /** The conversation as the inbox shows it, with its contact. */
  async get(businessId: string, viewer: Viewer, id: string): Promise<Static<typeof ConversationDetail>> {
    const row = await this.row(businessId, viewer, id);
    const contact = await contactsRepository.find(this.db, businessId, row.contact_id);
    if (!contact) throw notFound('conversation');
    return {
      conversation: { ...toInboxConversation(row), message_count: row.message_count, tags: row.tags },
      contact: {
        id: contact.id,
        first_name: contact.first_name,
        last_name: contact.last_name,
        email: contact.email,
        phone_number: contact.phone_number,
        external_id: contact.external_id,
        avatar_url: contact.avatar_url,
        tags: contact.tags,
        custom_fields: contact.custom_fields,
        created_at: contact.created_at,
      },
    };
  }

  /**
   * Moves the viewer's read position in the conversation (to the message named, else to its
   * latest), only forward; answers the position and what is left unread.
   */
  async markRead(businessId: string, viewer: Viewer, id: string, body: ReadBody) {
    await this.row(businessId, viewer, id);
    if (body.message_id !== undefined && !(await inboxRepository.hasMessage(this.db, businessId, id, body.message_id)))
      throw notFound('message');
    const position =
      (await conversationReadsRepository.moveTo(this.db, businessId, viewer.userId, id, body.message_id)) ??
      (await conversationReadsRepository.find(this.db, businessId, viewer.userId, id));
    const { unread_count } = await this.row(businessId, viewer, id);
    return {
      conversation_id: id,
      last_read_message_id: position?.last_read_message_id ?? null,
      read_at: position?.read_at ?? null,
      unread_count,
    };
  }

  /** The open conversations with unread messages for the viewer, for the sidebar's badge. */
  async unread(businessId: string, viewer: Viewer) {
    return { unread_conversations: await inboxRepository.unreadConversations(this.db, businessId, viewer.userId) };
  }

  /** The conversation's inbox row, open or closed. */
  private async row(businessId: string, viewer: Viewer, id: string): Promise<InboxRow> {
    const [row] = await inboxRepository.page(this.db, businessId, viewer.userId, { id }, undefined, 1);
    if (!row) throw notFound('conversation');
    return row;
  }

  /**
   * The query's filters as the repository takes them; an assignee that is no user or team of the
   * business is refused, as is a team that is no team of it.
   */
  private async filterOf(businessId: string, viewer: Viewer, query: InboxQuery): Promise<InboxFilter> {
    const filter: InboxFilter = { closed: query.status === 'closed' };
    if (query.channel !== undefined) {
      if (isChannelType(query.channel)) filter.channelType = query.channel;
      else filter.channelId = query.channel;
    }
    if (query.assignee === 'me') filter.assignedUserId = viewer.userId;
    else if (query.assignee === 'unassigned') filter.assignedUserId = null;
    else if (query.assignee !== undefined) {
      if (await usersRepository.find(this.db, businessId, query.assignee)) filter.assignedUserId = query.assignee;
      else if (await teamsRepository.find(this.db, businessId, query.assignee)) filter.teamId = query.assignee;
      else
        throw invalid('assignee is not a user or a team of the business', [
          { location: 'querystring', path: '/assignee', message: 'unknown user or team' },
        ]);
    }
    if (query.team !== undefined) {
      if (!(await teamsRepository.find(this.db, businessId, query.team)))
        throw invalid('team is not a team of the business', [
          { location: 'querystring', path: '/team', message: 'unknown team' },
        ]);
      if (filter.teamId !== undefined && filter.teamId !== query.team)
        throw invalid('assignee names another team than team', [
          { location: 'querystring', path: '/team', message: 'another team than assignee' },
        ]);
      filter.teamId = query.team;
    }
    if (query.control !== undefined) filter.manualControl = query.control === 'manual';
    const search = query.q?.trim();
    if (search) {
      const match = await this.contacts.matching(businessId, search, SEARCH_CONTACTS);
      filter.contactIds = match.ids;
      filter.namePrefix = match.namePrefix;
    }
    return filter;
  }
}
