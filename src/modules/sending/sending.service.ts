import type { Db } from '../../db/database.ts';
import { DomainError, forbidden, invalid, notFound } from '../../lib/domain-errors.ts';
import type { OutboxWorker } from '../../jobs/outbox.worker.ts';
import type { ChannelKind } from '../../channels/channel-kind.ts';
import { channelKind, templateChannelTypes } from '../../channels/registry.ts';
import { agentsRepository } from '../agents/agents.repository.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import { messageStatusRepository } from '../messages/message-status.repository.ts';
import { teamsRepository } from '../teams/teams.repository.ts';
import { storeAnswerIn, type IdempotencyClaim } from '../idempotency/idempotency.service.ts';
import type { ChannelRow, ChannelsService } from '../channels/channels.service.ts';
import type { ContactsService } from '../contacts/contacts.service.ts';
import type { TemplatesService } from '../templates/templates.service.ts';
import { usersRepository } from '../users/users.repository.ts';
import { ChannelPacer } from './channel-pacer.ts';
import type { ChannelPaceStore } from './channel-pace.store.ts';
import { SendJobHandler, type SendJobOptions } from './send.job.ts';
import type { ChannelFailureLog } from './channel-failures.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { Batcher } from '../../lib/batcher.ts';
import { acceptOne, acceptSends, plainSendAnswer, type SendOutcome, type SendPlan } from './sending.accept.ts';
import { freeFormContent, receiveOnly } from './sending.content.ts';
import { toSendConversation, toStatusRecord } from './sending.mappers.ts';
import type { SendBody, SendTemplateBody, SendTemplateQuery } from './sending.schemas.ts';

const notTheBusiness = (what: string) => forbidden(`${what} does not belong to the business`);

/**
 * Named variables the body of POST /send-template cannot carry: `phone` and `buttons` are its own
 * fields, and a `__proto__` key is refused by the JSON parser. Templates using them are sent with
 * POST /messages/send, whose template_values are a list.
 */
const SEND_TEMPLATE_RESERVED = new Set(['phone', 'buttons', '__proto__']);

/**
 * A send that needs nothing but a contact, its open conversation and a row: free-form, no opt-in,
 * no change to the conversation (bot_status, assignment, team, agent), no template. Those that
 * arrive together are written together (SendingService's batcher), answered plainSendAnswer.
 */
type PlainSend = Pick<
  SendPlan,
  'businessId' | 'channel' | 'recipient' | 'type' | 'content' | 'text' | 'metadata' | 'claim'
>;

/** The message written for a plain send, or why it was refused (nothing written for it then). */
type PlainSendOutcome = { messageId: string } | { refused: Error };

/** A send that asks for nothing but its message: written with others by writePlainSends. */
function isPlain(
  body: SendBody,
  fields: Set<string>,
): body is SendBody & { type: Exclude<SendBody['type'], 'template'> } {
  return (
    body.type !== 'template' &&
    body.template_uuid === undefined &&
    body.template_values === undefined &&
    body.optin_contact !== true &&
    body.bot_status === undefined &&
    body.assigned_user === undefined &&
    body.team_uuid === undefined &&
    fields.size === 0
  );
}

/**
 * Outbound messages: accepted here, delivered by the send job (send.job.ts). Plain sends (see
 * PlainSend) that arrive while earlier ones are being written are written together in one
 * transaction (one batch in flight, so a lone send is written at once); the others each have their
 * own transaction.
 */
export class SendingService {
  private readonly plainSends = new Batcher<PlainSend, PlainSendOutcome>((sends) => this.writePlainSends(sends), {
    maxRunning: 1,
    maxItems: 200,
  });

  constructor(
    private readonly db: Db,
    private readonly worker: OutboxWorker,
    private readonly channels: ChannelsService,
    private readonly templates: TemplatesService,
    private readonly contacts: ContactsService,
    private readonly domainEvents: Pick<DomainEventDispatcher, 'dispatch'>,
  ) {}

  /**
   * The worker side: delivers queued sends to the providers (register it on the outbox worker);
   * channels whose sends fail are reported to `log`.
   */
  sendJobHandler(log?: ChannelFailureLog, options?: SendJobOptions, pace?: ChannelPaceStore): SendJobHandler {
    return new SendJobHandler(
      {
        db: this.db,
        channels: this.channels,
        pacer: new ChannelPacer({ shared: pace }),
        log,
        domainEvents: this.domainEvents,
      },
      options,
    );
  }

  /** POST /messages/send; with an Idempotency-Key claim, the answer is stored with the send (storeAnswerIn). */
  async send(businessId: string, body: SendBody, claim?: IdempotencyClaim) {
    const channel = await this.channels.findForSending(businessId, body.channel_uuid);
    if (!channel) throw notFound('channel');
    if (body.from !== channel.type)
      throw invalid(`from must be the type of channel_uuid (${channel.type})`, [{ path: '/from' }]);
    const kind = this.kindOf(channel);
    const recipient = this.recipientOf(kind, body.to, 'to');
    const fields = new Set(body.fields?.split(',') ?? []);
    if (isPlain(body, fields)) {
      const { content, text } = freeFormContent(body.type, body.content, kind);
      const outcome = await this.plainSends.submit({
        businessId,
        channel,
        recipient,
        type: body.type,
        content,
        text,
        metadata: body.metadata ?? {},
        claim,
      });
      if ('refused' in outcome) throw outcome.refused;
      // Its events are handed over (webhook deliveries written) before the send is answered.
      await this.domainEvents.dispatch();
      return plainSendAnswer(outcome.messageId);
    }
    const plan: SendPlan = {
      businessId,
      channel,
      recipient,
      templateId: null,
      metadata: body.metadata ?? {},
      optIn: body.optin_contact === true,
      botStatus: body.bot_status,
      ...(await this.contentOf(businessId, channel, kind, body)),
    };
    const result = await this.db.transaction().execute(async (trx) => {
      // The user and the team are held until the commit: a removal of either waits, then unassigns them.
      if (body.assigned_user !== undefined) {
        const user = await usersRepository.findByEmail(trx, businessId, body.assigned_user, true);
        if (!user) throw invalid('assigned_user is not a user of the business', [{ path: '/assigned_user' }]);
        plan.assignedUserId = user.id;
      }
      if (body.team_uuid !== undefined) {
        if (!(await teamsRepository.find(trx, businessId, body.team_uuid, true)))
          throw invalid('team_uuid is not a team of the business', [{ path: '/team_uuid' }]);
        plan.teamId = body.team_uuid;
      }
      const accepted = await acceptOne(trx, plan);
      const answer = {
        message: { uuid: accepted.messageId, status: 'enqueued' as const },
        ...(fields.has('contact') ? { contact: await this.contacts.camelForm(accepted.contact, trx) } : {}),
        ...(fields.has('conversation')
          ? {
              conversation: await toSendConversation(
                trx,
                await conversationOpsRepository.find(trx, businessId, accepted.conversationId),
              ),
            }
          : {}),
      };
      await storeAnswerIn(trx, claim, 200, answer);
      return answer;
    });
    this.worker.wake('send');
    await this.domainEvents.dispatch();
    return result;
  }

  /** POST /send-template: every resource named must belong to the business (403 otherwise, as the contract says). */
  async sendTemplate(businessId: string, query: SendTemplateQuery, body: SendTemplateBody, claim?: IdempotencyClaim) {
    const template = await this.templates.get(businessId, query.template_id);
    if (!template) throw notTheBusiness('template_id');
    const channel = await this.templateChannel(businessId, query.from_phone_number);
    if (!channel) throw notTheBusiness('from_phone_number');
    if (query.agent_id !== undefined && !(await agentsRepository.find(this.db, businessId, query.agent_id)))
      throw notTheBusiness('agent_id');
    if (template.channel_id !== null && template.channel_id !== channel.id) {
      throw invalid('the template belongs to another number of the business', [{ path: '/from_phone_number' }]);
    }
    const recipient = this.recipientOf(this.kindOf(channel), body.phone, 'phone');
    const unreachable = template.variables.find((v) => SEND_TEMPLATE_RESERVED.has(v));
    if (unreachable !== undefined) {
      throw new DomainError(
        'invalid',
        'template_variable_missing',
        `template variable ${unreachable} cannot be filled here, where that field has another meaning: send this template with POST /messages/send and template_values`,
        [{ variable: unreachable }],
      );
    }
    const { phone: _phone, buttons, ...byKey } = body;
    const rendered = this.templates.render(template, { byKey, ...(buttons ? { buttons } : {}) });
    const answer = await this.db.transaction().execute(async (trx) => {
      const accepted = await acceptOne(trx, {
        businessId,
        channel,
        recipient,
        type: 'template',
        content: rendered.content,
        text: rendered.text,
        templateId: template.id,
        metadata: {},
        ...(query.agent_id !== undefined ? { agentId: query.agent_id } : {}),
      });
      const sent = {
        success: true,
        message_id: accepted.messageId,
        recipient: recipient.digits,
        template_name: template.name,
      };
      await storeAnswerIn(trx, claim, 200, sent);
      return sent;
    });
    this.worker.wake('send');
    await this.domainEvents.dispatch();
    return answer;
  }

  /**
   * One transaction for plain sends gathered by the batcher. A refused send (blocked,
   * template_required) is answered alone and the others are written. If the transaction fails
   * before its commit, the batcher writes each send alone; if the commit itself fails, whether it
   * happened is unknown, so every send of the batch answers that error (none is written twice).
   */
  private async writePlainSends(sends: PlainSend[]): Promise<PlainSendOutcome[]> {
    let committing = false;
    let written: { outcomes: SendOutcome[] };
    try {
      written = await this.db.transaction().execute(async (trx) => {
        const result = await acceptSends(trx, sends);
        committing = true;
        return result;
      });
    } catch (err) {
      if (committing) return sends.map(() => ({ refused: err as Error }));
      throw err;
    }
    if (written.outcomes.some((o) => 'messageId' in o)) this.worker.wake('send');
    return written.outcomes;
  }

  /** GET /messages/status/:uuid: outbound messages of the business only. */
  async status(businessId: string, id: string) {
    const message = await messageStatusRepository.outboundMessage(this.db, businessId, id);
    if (!message) throw notFound('message');
    return { message: toStatusRecord(message) };
  }

  /** The business's channel with this identifier among the types whose provider sends templates. */
  private async templateChannel(businessId: string, identifier: string): Promise<ChannelRow | undefined> {
    for (const type of templateChannelTypes) {
      const channel = await this.channels.findByIdentifier(businessId, type, identifier);
      if (channel) return channel;
    }
    return undefined;
  }

  /** The registry entry of the channel's provider kind: its address rules and capabilities. */
  private kindOf(channel: ChannelRow): ChannelKind {
    const kind = channelKind(channel.provider_kind);
    if (!kind) throw invalid(`channel ${channel.id} has no provider to send with`, [{ path: '/channel_uuid' }]);
    if (kind.capabilities.receiveOnly) throw receiveOnly(channel.type);
    return kind;
  }

  /**
   * The recipient's address by the rules of the address kind of the channel's provider (registry.ts),
   * as the send stores it: the contact's phone number and phone key.
   */
  private recipientOf(kind: ChannelKind, to: string, field: string): SendPlan['recipient'] {
    const address = kind.address.normalise(to);
    if (!address) throw invalid(`${field} is not ${kind.address.description}`, [{ path: `/${field}` }]);
    return { digits: address.value, key: address.key };
  }

  /**
   * The content of a send: free-form from `content`, or the rendered template. A send naming a
   * template_uuid is a template send whether its type is `template` or `text`: clients migrating
   * from the platform the contract comes from send templates as `text` with the message's text in
   * `content.text`. That text is not what the template renders, so it is ignored: what is
   * delivered, and stored as the message, is the template filled with template_values.
   */
  private async contentOf(businessId: string, channel: ChannelRow, kind: ChannelKind, body: SendBody) {
    if (body.template_uuid === undefined) {
      if (body.type === 'template')
        throw invalid('a template message needs template_uuid', [{ path: '/template_uuid' }]);
      if (body.template_values !== undefined)
        throw invalid('template_values needs template_uuid', [{ path: '/template_values' }]);
      return { type: body.type, ...freeFormContent(body.type, body.content, kind) };
    }
    if (body.type !== 'template' && body.type !== 'text')
      throw invalid('a send with template_uuid takes type template (or text)', [{ path: '/type' }]);
    for (const name of ['url', 'caption', 'filename'] as const) {
      if (body.content[name] !== undefined)
        throw invalid(`content.${name} does not belong to a template message`, [{ path: `/content/${name}` }]);
    }
    const template = await this.templates.get(businessId, body.template_uuid);
    if (!template) throw notFound('template');
    if (template.channel_id !== null && template.channel_id !== channel.id) {
      throw invalid('the template belongs to another channel of the business', [{ path: '/template_uuid' }]);
    }
    // template_values fill the template's variables in the order they appear.
    const values = body.template_values ?? [];
    if (values.length > template.variables.length)
      throw invalid(`the template has ${template.variables.length} variables`, [{ path: '/template_values' }]);
    const byKey = Object.fromEntries(values.map((value, i) => [template.variables[i], value]));
    const rendered = this.templates.render(template, { byKey });
    return { type: 'template', content: rendered.content, text: rendered.text, templateId: template.id };
  }
}
