import { kindsServing } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict, invalid, notFound } from '../../lib/domain-errors.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import type { DashboardLinks } from '../../lib/links.ts';
import { normalisePhone } from '../../lib/phone.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import { contactFieldChanged, writeEvents } from '../events/events.writer.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { usersRepository } from '../users/users.repository.ts';
import { contactIdentitiesRepository } from './contact-identities.repository.ts';
import { identityLockName, type AddressIdentity, type ContactIdentity } from './contact-identity.ts';
import { planUpdate, uniqueTags } from './contacts.changes.ts';
import { toContactCamel, toContactSnake } from './contacts.mappers.ts';
import { contactsRepository, type ContactIdentifiers, type ContactRow } from './contacts.repository.ts';
import {
  SEARCH_LIMIT,
  type ContactCamelForm,
  type CreateContactInput,
  type SearchQuery,
  type UpdateContactBody,
} from './contacts.schemas.ts';

/** Who changes a contact, for its event: the public API by default, a dashboard user, or an AI agent's tool. */
export interface ContactActor {
  actorType: 'api' | 'human' | 'ai_agent';
  userId?: string | null;
  agentId?: string | null;
  /** The event's source: `api`, `dashboard` for a dashboard user's edit, `ai` for an AI agent's. */
  source: string;
}

const API_ACTOR: ContactActor = { actorType: 'api', source: 'api' };

/**
 * The identity a search's channel and address name, by the address rules of the channel type's
 * provider kinds (registry.ts); undefined when neither is sent. 400 when only one is, when no provider
 * kind serves the channel type, or when the address is not one of its kind.
 */
function channelAddressIdentity(query: SearchQuery): AddressIdentity | undefined {
  if (query.channel === undefined && query.address === undefined) return undefined;
  if (query.channel === undefined || query.address === undefined)
    throw invalid('channel and address are sent together', [{ path: query.channel ? '/address' : '/channel' }]);
  const [kind] = kindsServing(query.channel);
  if (!kind) throw invalid(`no channel of type ${query.channel} can be connected yet`, [{ path: '/channel' }]);
  const address = kind.address.normalise(query.address);
  if (!address) throw invalid(`address is not ${kind.address.description}`, [{ path: '/address' }]);
  return { kind: kind.address.kind, value: address.key };
}

function parsePhone(input: string, field: string) {
  const phone = normalisePhone(input);
  if (!phone) throw invalid(`${field} is not a valid phone number with country code`, [{ path: `/${field}` }]);
  return phone;
}

/**
 * Contacts of a business: search, create, read, update, delete, close their conversations. The
 * domain events of a change are handed over before the answer (open dashboards hear of it at once).
 */
export class ContactsService {
  constructor(
    private readonly db: Db,
    private readonly links: DashboardLinks,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  /** Contacts matching any identifier sent (aliases resolve to the survivor), oldest first, at most 50. */
  async search(businessId: string, query: SearchQuery) {
    return { results: await this.snakeForms(this.db, businessId, await this.searchRows(businessId, query)) };
  }

  /** The rows of search, for a caller that shows more of each contact (the dashboard's list). */
  async searchRows(businessId: string, query: SearchQuery): Promise<ContactRow[]> {
    const identity = channelAddressIdentity(query);
    if (
      query.email === undefined &&
      query.phone === undefined &&
      query.external_id === undefined &&
      identity === undefined
    ) {
      throw invalid('send at least one of email, phone, external_id, or channel with address');
    }
    const ids: ContactIdentifiers = { email: query.email, externalId: query.external_id, identity };
    if (query.phone !== undefined) ids.phoneKey = parsePhone(query.phone, 'phone').key;
    return contactsRepository.findByIdentifiers(this.db, businessId, ids, SEARCH_LIMIT);
  }

  async get(businessId: string, id: string) {
    const [form] = await this.snakeForms(this.db, businessId, [await this.require(this.db, businessId, id)]);
    return form;
  }

  /** The snake_case forms of contacts, with the addresses channels know each by. */
  private async snakeForms(db: Db, businessId: string, rows: ContactRow[]) {
    const addresses = await contactIdentitiesRepository.channelAddresses(
      db,
      businessId,
      rows.map((r) => r.id),
    );
    return rows.map((row) => toContactSnake(row, addresses.get(row.id) ?? []));
  }

  /**
   * Creates a contact. An email, phone or external_id that already identifies a contact (its own or
   * an alias) is a conflict naming that contact; the identifiers are locked first so two concurrent
   * creations cannot both pass the check.
   */
  async create(businessId: string, input: CreateContactInput) {
    const phone = input.phone_number === undefined ? undefined : parsePhone(input.phone_number, 'phone_number');
    const email = input.email?.trim();
    if (email === undefined && phone === undefined && input.external_id === undefined) {
      throw invalid('send at least one of email, phone_number, external_id');
    }
    const claims: { field: string; identity: ContactIdentity; ids: ContactIdentifiers }[] = [];
    if (email !== undefined)
      claims.push({ field: 'email', identity: { kind: 'email', value: email.toLowerCase() }, ids: { email } });
    if (phone !== undefined)
      claims.push({
        field: 'phone_number',
        identity: { kind: 'phone', value: phone.key },
        ids: { phoneKey: phone.key },
      });
    if (input.external_id !== undefined)
      claims.push({
        field: 'external_id',
        identity: { kind: 'external_id', value: input.external_id },
        ids: { externalId: input.external_id },
      });
    const customFields = Object.fromEntries(
      Object.entries(input.custom_fields ?? {}).filter(([, value]) => value !== null),
    );
    try {
      const row = await this.db.transaction().execute(async (trx) => {
        await contactsRepository.lockIdentifiers(
          trx,
          businessId,
          claims.map((c) => identityLockName(c.identity)),
        );
        const taken = [];
        for (const { field, ids } of claims) {
          const [owner] = await contactsRepository.findByIdentifiers(trx, businessId, ids, 1);
          if (owner) taken.push({ field, contact_id: owner.id });
        }
        if (taken.length > 0) throw conflict('an identifier already belongs to a contact', taken);
        const created = await contactsRepository.insert(trx, {
          business_id: businessId,
          id: newId(),
          first_name: input.first_name ?? '',
          last_name: input.last_name ?? '',
          email: email ?? null,
          phone_number: phone?.digits ?? null,
          phone_key: phone?.key ?? null,
          external_id: input.external_id ?? null,
          tags: uniqueTags(input.tags ?? []),
          custom_fields: customFields,
          source: 'api',
          is_test: input.is_test ?? false,
        });
        await contactsChanged(trx, businessId, [created.id], 'created');
        return created;
      });
      await this.domainEvents.dispatch(['contact_changed']);
      return toContactSnake(row, []);
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict('an identifier already belongs to a contact', [{ field: 'external_id' }]);
      throw err;
    }
  }

  /** Applies the changed fields and records them as one `contact_field_changed` event, in one transaction. */
  async update(
    businessId: string,
    id: string,
    body: UpdateContactBody,
    actor: ContactActor = API_ACTOR,
  ): Promise<ContactCamelForm> {
    const form = await this.db
      .transaction()
      .execute(async (trx) => this.camelForm(await this.updateIn(trx, businessId, id, body, actor), trx));
    await this.domainEvents.dispatch(['contact_changed']);
    return form;
  }

  /**
   * The update's one write path, in the caller's transaction (an AI agent's tool records its call in
   * the same commit); the caller hands the domain events over after it commits. Answers the row as
   * it now is.
   */
  async updateIn(
    trx: Db,
    businessId: string,
    id: string,
    body: UpdateContactBody,
    actor: ContactActor = API_ACTOR,
  ): Promise<ContactRow> {
    if (body.assigned_user !== undefined && body.unassign_user === true) {
      throw invalid('send either assigned_user or unassign_user, not both');
    }
    const row = await this.require(trx, businessId, id, true);
    let assignee: { id: string; email: string } | undefined;
    if (body.assigned_user !== undefined) {
      // Held until the commit: a removal of the user waits, then unassigns the contact.
      assignee = await usersRepository.findByEmail(trx, businessId, body.assigned_user, true);
      if (!assignee) throw invalid('assigned_user is not a user of the business', [{ path: '/assigned_user' }]);
    }
    const current = row.assigned_user_id
      ? ((await usersRepository.find(trx, businessId, row.assigned_user_id)) ?? null)
      : null;
    const { values, changes } = planUpdate(row, body, assignee, current);
    const updated = changes.length > 0 ? await contactsRepository.update(trx, businessId, id, values) : row;
    if (body.tags !== undefined) await conversationOpsRepository.setContactTags(trx, businessId, id, updated.tags);
    await contactFieldChanged(trx, businessId, {
      contactId: id,
      actorType: actor.actorType,
      userId: actor.userId,
      agentId: actor.agentId,
      source: actor.source,
      changes,
    });
    return updated;
  }

  /** Deletes the contact with its conversations, messages and events (an id that is no UUID names none). */
  async remove(businessId: string, id: string) {
    const removed =
      isUuid(id) &&
      (await this.db.transaction().execute(async (trx) => {
        if (!(await contactsRepository.remove(trx, businessId, id))) return false;
        await contactsChanged(trx, businessId, [id], 'deleted');
        return true;
      }));
    if (!removed) throw notFound('contact');
    await this.domainEvents.dispatch(['contact_changed']);
    return { success: true, contact_id: id };
  }

  /**
   * Closes every open conversation of the contact, one `conversation_archived` event each. The
   * answer's closedAt is the closing time (the contract), also for a contact without conversations,
   * whose closedAt reads null again afterwards (it has no conversation closed).
   */
  async closeConversations(businessId: string, id: string): Promise<ContactCamelForm> {
    if (!isUuid(id)) throw notFound('contact');
    const form = await this.db.transaction().execute(async (trx) => {
      const row = await this.require(trx, businessId, id, true);
      const closed = await conversationOpsRepository.closeOpenOfContact(trx, businessId, id);
      await writeEvents(
        trx,
        businessId,
        closed.map((conversation) => ({
          type: 'conversation_archived' as const,
          contact_id: id,
          conversation_id: conversation.id,
          channel: conversation.channel,
          actor_type: 'api' as const,
          data: { origin: 'api' },
        })),
      );
      const form = await this.camelForm(row, trx);
      return { ...form, closedAt: form.closedAt ?? (await contactsRepository.transactionTime(trx)) };
    });
    await this.domainEvents.dispatch(['conversation_changed']);
    return form;
  }

  /**
   * camelCase form of a contact row (also for other modules, e.g. webhook payloads); pass `db` inside a
   * transaction.
   */
  async camelForm(row: ContactRow, db: Db = this.db): Promise<ContactCamelForm> {
    const summary = await contactsRepository.conversationSummary(db, row.business_id, row.id);
    const assigned = row.assigned_user_id
      ? await usersRepository.find(db, row.business_id, row.assigned_user_id)
      : undefined;
    return toContactCamel(row, { summary, assignedUserEmail: assigned?.email ?? null, links: this.links });
  }

  private async require(db: Db, businessId: string, id: string, forUpdate = false): Promise<ContactRow> {
    const row = forUpdate
      ? await contactsRepository.findForUpdate(db, businessId, id)
      : await contactsRepository.find(db, businessId, id);
    if (!row) throw notFound('contact');
    return row;
  }
}
