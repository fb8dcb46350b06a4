import type { ChannelKind } from '../../channels/channel-kind.ts';
import { channelKind } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import type { OutboxWorker } from '../../jobs/outbox.worker.ts';
import type { RelayedReply } from '../../channels/provider.ts';
import { lockMany } from '../../db/advisory-locks.ts';
import { conflict, DomainError, invalid, notFound } from '../../lib/domain-errors.ts';
import { isUuid } from '../../lib/ids.ts';
import type { ChannelRow, ChannelsService } from '../channels/channels.service.ts';
import { contactIdentitiesRepository } from '../contacts/contact-identities.repository.ts';
import { COLUMN_KINDS } from '../contacts/contact-identity.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import type { ConversationRow } from '../conversations/conversation-store.repository.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { storeAnswerIn, type IdempotencyClaim } from '../idempotency/idempotency.service.ts';
import type { RelayResult } from '../inbound/inbound.service.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import type { TemplatesService } from '../templates/templates.service.ts';
import { usersRepository } from '../users/users.repository.ts';
import { acceptOne, lockSendTarget, type SendPlan } from './sending.accept.ts';
import { freeFormContent, receiveOnly } from './sending.content.ts';
import type { ComposeAnswer, ReplyAnswer, ReplyBody } from './replies.schemas.ts';

/** Most templates the reply box offers. */
const COMPOSE_TEMPLATES_MAX = 200;

/** Where a reply in a conversation goes: its channel, the channel's kind and the contact's address there. */
interface ReplyTarget {
  conversation: ConversationRow;
  channel: ChannelRow;
  kind: ChannelKind;
  recipient: SendPlan['recipient'];
}

/**
 * What a team member writes in a conversation from the dashboard. A reply is a send like the public
 * API's, through the same write path (acceptSends: window, opt-out, conversation, message, outbox
 * job, message_created domain event), stored as the user's (`sender_type` human), which is why it
 * fires no message_created webhook (firesMessageCreated): the rule lives with the data, not here.
 */
export class RepliesService {
  constructor(
    private readonly db: Db,
    private readonly worker: OutboxWorker,
    private readonly channels: ChannelsService,
    private readonly templates: TemplatesService,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  /** What the reply box may send now: free-form while the service window is open, the channel's templates always. */
  async compose(businessId: string, conversationId: string): Promise<ComposeAnswer> {
    const target = await this.target(businessId, conversationId);
    // A person replying here may use the kind's longer window for people, where it has one.
    const { serviceWindowHours, humanWindowHours } = target.kind.capabilities;
    const hours = serviceWindowHours === null ? null : (humanWindowHours ?? serviceWindowHours);
    const window =
      hours === null
        ? { open: true, ends_at: null }
        : ((await messagesRepository.serviceWindow(this.db, businessId, {
            contact_id: target.conversation.contact_id,
            channel_id: target.channel.id,
            channel: target.channel.type,
            hours,
          })) ?? { open: false, ends_at: null });
    const templates = target.kind.capabilities.templates
      ? (await this.templates.list(businessId, COMPOSE_TEMPLATES_MAX)).filter(
          (t) => t.channel_id === null || t.channel_id === target.channel.id,
        )
      : [];
    return {
      window_open: window.open,
      window_ends_at: window.ends_at,
      templates: templates.map((t) => ({
        id: t.id,
        name: t.name,
        language: t.language,
        body: t.body,
        variables: t.variables,
      })),
    };
  }

  /**
   * Sends a text or a template into the conversation as the user. Outside the service window a text
   * answers 400 `template_required`, the public API's answer to the same rule, and the page offers
   * templates then. With an Idempotency-Key claim the answer is stored with the send.
   */
  async reply(
    businessId: string,
    userId: string,
    conversationId: string,
    body: ReplyBody,
    claim?: IdempotencyClaim,
  ): Promise<ReplyAnswer> {
    const target = await this.target(businessId, conversationId);
    const user = await usersRepository.find(this.db, businessId, userId);
    if (!user) throw notFound('user');
    const quoted =
      body.reply_to === undefined
        ? undefined
        : await messagesRepository.inConversation(this.db, businessId, conversationId, body.reply_to);
    if (body.reply_to !== undefined && !quoted) throw notFound('message');
    const content = await this.contentOf(businessId, target, body);
    const plan: SendPlan = {
      businessId,
      channel: target.channel,
      recipient: target.recipient,
      metadata: {},
      userId,
      contactId: target.conversation.contact_id,
      ...(quoted ? { replyToId: quoted.id } : {}),
      ...content,
    };
    const answer = await this.db.transaction().execute(async (trx) => {
      const accepted = await acceptOne(trx, plan);
      const stored = await messagesRepository.inConversation(
        trx,
        businessId,
        accepted.conversationId,
        accepted.messageId,
      );
      if (!stored) throw new Error('the accepted message is not in its conversation');
      const sent: ReplyAnswer = {
        message: {
          kind: 'message',
          id: stored.id,
          conversation_id: stored.conversation_id,
          created_at: stored.created_at,
          direction: 'outbound',
          type: stored.type,
          text: stored.text,
          media: [],
          location: null,
          contacts: [],
          choice: null,
          reaction: null,
          reply_to: quoted
            ? { id: quoted.id, type: quoted.type, text: quoted.text, direction: quoted.direction }
            : null,
          forwarded: false,
          status: stored.status,
          error: null,
          sender: { type: 'human', user: { id: user.id, name: user.name, email: user.email }, agent: null },
        },
      };
      await storeAnswerIn(trx, claim, 202, sent);
      return sent;
    });
    this.worker.wake('send');
    await this.domainEvents.dispatch();
    return answer;
  }

  /**
   * Sends the replies a person wrote in a provider that mirrors the business's conversations (a
   * helpdesk's inbox), relayed by `via`, through each conversation's own channel, as a person's
   * (sender_type human, no user of the service). Each is sent once per key: the key's lock, then a
   * reply already accepted under it, is checked in the transaction that accepts it, so a redelivered
   * notification sends nothing. A conversation of another business, none, or one the channel's rules
   * refuse (a closed window, an opted-out contact) sends nothing: the provider is answered all the
   * same, since delivering the notification again would not change the answer. Answers how many
   * went, and why the others did not (for the request log).
   */
  async relay(via: ChannelRow, replies: RelayedReply[]): Promise<RelayResult> {
    const businessId = via.business_id;
    const outcome: RelayResult = { sent: 0, refused: [] };
    const refuse = (reply: RelayedReply, reason: string) =>
      outcome.refused.push({ conversationId: reply.conversationId, key: reply.key, reason });
    for (const reply of replies) {
      if (!isUuid(reply.conversationId)) {
        refuse(reply, 'no conversation of the service');
        continue;
      }
      try {
        const target = await this.target(businessId, reply.conversationId);
        if (target.channel.id === via.id) {
          refuse(reply, 'the conversation is the relaying channel its own');
          continue;
        }
        const plan: SendPlan = {
          businessId,
          channel: target.channel,
          recipient: target.recipient,
          metadata: { relayed_by: via.id, relay_key: reply.key },
          relayedBy: via.id,
          contactId: target.conversation.contact_id,
          type: 'text',
          ...freeFormContent('text', { text: reply.text }, target.kind),
        };
        const sent = await this.db.transaction().execute(async (trx) => {
          await lockMany(trx, [{ businessId, key: `relay:${via.id}:${reply.key}` }]);
          if (await messagesRepository.hasRelayed(trx, businessId, plan.contactId!, via.id, reply.key)) return false;
          await acceptOne(trx, plan);
          return true;
        });
        if (sent) outcome.sent++;
      } catch (err) {
        if (!(err instanceof DomainError) || err.kind === 'unavailable') throw err;
        refuse(reply, err.message);
      }
    }
    if (outcome.sent > 0) {
      this.worker.wake('send');
      await this.domainEvents.dispatch();
    }
    return outcome;
  }

  /**
   * The send of an AI agent's reply in the conversation, read before the run's transaction (which
   * accepts it with acceptAgentReply): a text to the conversation's contact on its channel, as the agent.
   */
  async agentReplyPlan(
    businessId: string,
    conversationId: string,
    reply: { agentId: string; text: string; botStatus?: 'bot_start' | 'bot_end'; botStatusReason?: string },
  ): Promise<SendPlan> {
    const target = await this.target(businessId, conversationId);
    return {
      businessId,
      channel: target.channel,
      recipient: target.recipient,
      metadata: {},
      agentSenderId: reply.agentId,
      contactId: target.conversation.contact_id,
      type: 'text',
      ...freeFormContent('text', { text: reply.text }, target.kind),
      ...(reply.botStatus ? { botStatus: reply.botStatus } : {}),
      ...(reply.botStatusReason ? { botStatusReason: reply.botStatusReason } : {}),
    };
  }

  /**
   * Takes, in the run's transaction, the locks every writer of the reply's conversation takes, in
   * their order (the contact's identity, then the conversation): what the run reads next (manual
   * control, the newest inbound message) stays so until it commits.
   */
  async lockAgentReply(trx: Db, plan: SendPlan): Promise<void> {
    if (plan.contactId === undefined) throw new Error("an agent's reply names its conversation's contact");
    await lockSendTarget(trx, { ...plan, contactId: plan.contactId });
  }

  /**
   * Accepts an agent's reply (agentReplyPlan) in the caller's transaction, through the send's one
   * write path; the caller calls afterAgentReplies once it committed.
   */
  async acceptAgentReply(trx: Db, plan: SendPlan): Promise<{ messageId: string }> {
    const { messageId } = await acceptOne(trx, plan);
    return { messageId };
  }

  /** After the commit of agents' replies: the send worker starts at once, and their events are handed over. */
  async afterAgentReplies(): Promise<void> {
    this.worker.wake('send');
    await this.domainEvents.dispatch();
  }

  /** The conversation, its channel (which must still send) and the contact's address of the channel's kind. */
  private async target(businessId: string, conversationId: string): Promise<ReplyTarget> {
    const conversation = await conversationOpsRepository.get(this.db, businessId, conversationId);
    if (!conversation) throw notFound('conversation');
    const channel =
      conversation.channel_id === null
        ? undefined
        : await this.channels.findForSending(businessId, conversation.channel_id);
    if (!channel) throw conflict('the conversation has no channel to send with');
    const kind = channelKind(channel.provider_kind);
    if (!kind) throw conflict(`channel ${channel.id} has no provider to send with`);
    if (kind.capabilities.receiveOnly) throw receiveOnly(channel.type);
    const contact = await contactsRepository.find(this.db, businessId, conversation.contact_id);
    // The contact's address of the channel's kind: whichever of its addresses the kind reads, from its
    // columns (phone, email), or else its identities of the kind (a page-scoped id, say).
    const addresses = COLUMN_KINDS.includes(kind.address.kind)
      ? [contact?.phone_number, contact?.email]
      : await this.channelAddresses(businessId, conversation.contact_id, kind.address.kind);
    const address = addresses.flatMap((a) => (a ? [kind.address.normalise(a)] : [])).find((a) => a !== undefined);
    if (!address) throw conflict(`the contact has no address this channel sends to (${kind.address.description})`);
    return { conversation, channel, kind, recipient: { digits: address.value, key: address.key } };
  }

  /** The contact's addresses of an address kind that has no column (its identities of that kind). */
  private async channelAddresses(businessId: string, contactId: string, kind: string): Promise<string[]> {
    const identities = await contactIdentitiesRepository.channelAddresses(this.db, businessId, [contactId]);
    return (identities.get(contactId) ?? []).flatMap((identity) => (identity.kind === kind ? [identity.value] : []));
  }

  /** A text by the free-form rules of the channel's kind, or a template of the business filled with `variables`. */
  private async contentOf(
    businessId: string,
    target: ReplyTarget,
    body: ReplyBody,
  ): Promise<Pick<SendPlan, 'type' | 'content' | 'text' | 'templateId'>> {
    if ('text' in body) return { type: 'text', ...freeFormContent('text', { text: body.text }, target.kind) };
    if (!target.kind.capabilities.templates)
      throw invalid("this conversation's channel sends no templates", [{ path: '/template_id' }]);
    const template = await this.templates.get(businessId, body.template_id);
    if (!template) throw notFound('template');
    if (template.channel_id !== null && template.channel_id !== target.channel.id)
      throw invalid("the template belongs to another of the business's channels", [{ path: '/template_id' }]);
    const rendered = this.templates.render(template, { byKey: body.variables ?? {} });
    return { type: 'template', content: rendered.content, text: rendered.text, templateId: template.id };
  }
}
