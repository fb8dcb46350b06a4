import type { Db } from '../../db/database.ts';
import type { MessagesTable } from '../../db/types.ts';
import { newId } from '../../lib/ids.ts';
import type { DashboardLinks } from '../../lib/links.ts';
import { mediaRepository } from '../media/media.repository.ts';
import type { MediaSigningKey } from '../media/media.signing.ts';
import { isoAt, type Clock } from '../../lib/clock.ts';
import { webhookDeliveriesRepository } from './webhook-deliveries.repository.ts';
import { messageCreatedPayload } from './webhook-payload.ts';
import { webhooksRepository } from './webhooks.repository.ts';

/**
 * The one rule of which messages fire `message_created`: what contacts send us (inbound) and what
 * the business sends through the public API (`POST /messages/send`, `POST /send-template`).
 * Messages written by people from the dashboard (`human`), AI agents and automations do not.
 */
export function firesMessageCreated(message: Pick<MessagesTable, 'direction' | 'sender_type'>): boolean {
  return message.direction === 'inbound' ? message.sender_type === 'contact' : message.sender_type === 'api';
}

/**
 * Turns stored messages into webhook deliveries. The `message_created` domain events call it
 * (webhook-subscriber.ts) in the transaction that hands them over, so each message's deliveries
 * are written once, after the message's commit.
 */
export class WebhookEvents {
  constructor(
    private readonly links: DashboardLinks,
    private readonly signingKey: MediaSigningKey,
    private readonly clock: Clock,
    private readonly wakeWorker: () => void,
  ) {}

  /**
   * For the messages of one business (stored with their media rows) that fire `message_created`,
   * writes one delivery per enabled webhook of the business with the payload built now from the
   * stored rows and frozen (retries resend it unchanged), with a fixed number of statements. Give
   * the ids in message order: deliveries of one conversation go out in the order they are written.
   * Returns whether deliveries were written; call wake() after the commit then.
   */
  async messagesCreated(trx: Db, businessId: string, messageIds: readonly string[]): Promise<boolean> {
    if (messageIds.length === 0) return false;
    const webhookIds = await webhooksRepository.enabledFor(trx, businessId, 'message_created');
    if (webhookIds.length === 0) return false;
    const rows = await webhooksRepository.messages(trx, businessId, messageIds);
    const byId = new Map(rows.filter(firesMessageCreated).map((m) => [m.id, m]));
    const messages = messageIds.flatMap((id) => byId.get(id) ?? []);
    if (messages.length === 0) return false;
    const contactIds = [...new Set(messages.map((m) => m.contact_id))];
    const contacts = new Map(
      (await webhooksRepository.contacts(trx, businessId, contactIds)).map(({ asked, ...contact }) => [asked, contact]),
    );
    const files = await mediaRepository.forMessages(
      trx,
      businessId,
      messages.map((m) => m.id),
    );
    const nowMs = this.clock.now();
    const at = isoAt(nowMs);
    const ctx = { links: this.links, signingKey: this.signingKey, nowMs };
    const deliveries = messages.flatMap((message) => {
      const contact = contacts.get(message.contact_id);
      if (!contact) return [];
      const payload = messageCreatedPayload(
        message,
        contact,
        files.filter((f) => f.message_id === message.id),
        ctx,
      );
      return webhookIds.map((webhookId) => ({
        business_id: businessId,
        id: newId(),
        webhook_id: webhookId,
        event: 'message_created',
        message_id: message.id,
        conversation_id: message.conversation_id,
        payload,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      }));
    });
    await webhookDeliveriesRepository.insertMany(trx, deliveries);
    return deliveries.length > 0;
  }

  /** Tells this process's delivery worker that deliveries were committed (other processes poll). */
  wake(): void {
    this.wakeWorker();
  }
}
