import type { ChannelKind } from '../../channels/channel-kind.ts';
import { channelKind } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import type { OutboxWorker } from '../../jobs/outbox.worker.ts';
import type { FetchedMedia, MediaKind, RelayedReply } from '../../channels/provider.ts';
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
import type { FileForSend, MediaService } from '../media/media.service.ts';
import { relayedFileType } from './relayed-files.ts';
import { freeFormContent, receiveOnly, refuseUnsentMedia } from './sending.content.ts';
import type { ComposeAnswer, ReplyAnswer, ReplyBody } from './replies.schemas.ts';

/** The media types that take a caption: a relayed reply's text rides on its first file of these. */
const CAPTIONED = new Set<MediaKind>(['image', 'video', 'document']);

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
    private readonly media: Pick<MediaService, 'storeForSend' | 'reserveForSend'>,
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
   * notification sends nothing. A reply's files are fetched through `via` first (relayFiles) and
   * each goes as a media message of its own, the text as the first one's caption where its type takes
   * one, else as a text before them; all of a reply are accepted together or none. A conversation of
   * another business, or none, sends nothing; one the channel's rules refuse (a closed window, an
   * opted-out contact, a media type it does not send, a file that cannot be had) sends nothing and is
   * reported to the provider as failed with why. The provider is answered all the same, since
   * delivering the notification again would not change the answer; a file the provider could not
   * give for now (its 5xx, a timeout) answers 503 instead, so that it delivers the reply again.
   * Answers how many went, and why the others did not (for the request log).
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
      let reached = false;
      try {
        const found = await this.target(businessId, reply.conversationId);
        if (found.channel.id === via.id) {
          refuse(reply, 'the conversation is the relaying channel its own');
          continue;
        }
        reached = true;
        const contactId = found.conversation.contact_id;
        const base = {
          businessId,
          channel: found.channel,
          recipient: found.recipient,
          metadata: { relayed_by: via.id, relay_key: reply.key },
          relayedBy: via.id,
          contactId,
        };
        // A redelivery of a reply with files fetches nothing again.
        if (
          reply.files?.length &&
          (await messagesRepository.hasRelayed(this.db, businessId, contactId, via.id, reply.key))
        )
          continue;
        const files = reply.files?.length ? await this.relayFiles(via, found, reply) : [];
        const captioned = files.length > 0 && reply.text !== '' && CAPTIONED.has(files[0].kind);
        const sent = await this.db.transaction().execute(async (trx) => {
          await lockMany(trx, [{ businessId, key: `relay:${via.id}:${reply.key}` }]);
          if (await messagesRepository.hasRelayed(trx, businessId, contactId, via.id, reply.key)) return false;
          if (reply.text !== '' && !captioned)
            await acceptOne(trx, {
              ...base,
              type: 'text',
              ...freeFormContent('text', { text: reply.text }, found.kind),
            });
          for (const [i, file] of files.entries()) {
            const reserved = await this.media.reserveForSend(trx, businessId, file.stored);
            const content = {
              url: reserved.url,
              ...(i === 0 && captioned ? { caption: reply.text } : {}),
              ...(file.kind === 'document' && file.stored.filename ? { filename: file.stored.filename } : {}),
            };
            const plan: SendPlan = { ...base, type: file.kind, ...freeFormContent(file.kind, content, found.kind) };
            await reserved.attach((await acceptOne(trx, plan)).messageId);
          }
          return true;
        });
        if (sent) outcome.sent++;
      } catch (err) {
        if (!(err instanceof DomainError) || err.kind === 'unavailable') throw err;
        refuse(reply, err.message);
        // The reply reached one of the business's conversations: its provider shows why it went nowhere.
        if (reached) await this.reportRefused(via, reply.key, err.message);
      }
    }
    if (outcome.sent > 0) {
      this.worker.wake('send');
      await this.domainEvents.dispatch();
    }
    return outcome;
  }

  /**
   * A relayed reply's files, downloaded through the relaying channel's adapter (its credentials,
   * the core's dispatcher and media limit), typed by their bytes, refused when the conversation's
   * channel does not send that type, and stored before any message names them. A provider failure
   * worth a retry answers `unavailable`; any other refuses the reply.
   */
  private async relayFiles(
    via: ChannelRow,
    target: ReplyTarget,
    reply: RelayedReply,
  ): Promise<{ kind: MediaKind; stored: FileForSend }[]> {
    const provider = this.channels.providerFor(via);
    const files: { kind: MediaKind; stored: FileForSend }[] = [];
    for (const [i, file] of (reply.files ?? []).entries()) {
      let fetched: FetchedMedia;
      try {
        fetched = await provider.fetchMedia(file.ref);
      } catch (err) {
        const failure = provider.classifyError(err);
        if (failure.credentialsRejected) await this.channels.credentialsRejected(via);
        const why = `file ${file.ref} could not be fetched: ${failure.code}: ${failure.detail}`;
        if (failure.retryable) throw new DomainError('unavailable', 'provider_unavailable', why);
        throw invalid(why);
      }
      if (fetched.bytes.length === 0) throw invalid(`file ${file.ref} is empty`);
      const { contentType, kind } = await relayedFileType(fetched.bytes);
      refuseUnsentMedia(kind, target.kind.capabilities);
      const name = `relayed/${via.id}/${reply.key.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100)}-${i}`;
      const stored = await this.media.storeForSend(via.business_id, name, {
        bytes: fetched.bytes,
        contentType,
        filename: file.filename ?? fetched.filename ?? null,
      });
      files.push({ kind, stored });
    }
    return files;
  }

  /** Tells the relaying provider a reply went nowhere, and why; best effort, as the delivery reports are. */
  private async reportRefused(via: ChannelRow, key: string, reason: string): Promise<void> {
    const provider = this.channels.providerFor(via);
    await provider.reportRelayed?.(key, { failed: reason }).catch(() => undefined);
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
