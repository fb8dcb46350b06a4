import type { Db } from '../../db/database.ts';
import type { MessagesTable } from '../../db/types.ts';
import { newId } from '../../lib/ids.ts';
import type { DashboardLinks } from '../../lib/links.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { mediaRepository } from '../media/media.repository.ts';
import type { MediaSigningKey } from '../media/media.signing.ts';
import { isoAt, type Clock } from './webhook-clock.ts';
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
 * Turns stored messages into webhook deliveries, inside the transaction that writes the message,
 * so a delivery exists exactly when its message does (the outbox pattern).
 */
export class WebhookEvents {
  constructor(
    private readonly links: DashboardLinks,
    private readonly signingKey: MediaSigningKey,
    private readonly clock: Clock,
    private readonly wakeWorker: () => void,
  ) {}

  /**
   * Call inside the transaction that created message `messageId` (after its media rows): when the
   * message fires `message_created`, writes one delivery per enabled webhook of the business with
   * the payload built now from the stored rows and frozen (retries resend it unchanged). Returns
   * whether deliveries were written; call wake() after the commit then.
   */
  async messageCreated(trx: Db, businessId: string, messageId: string): Promise<boolean> {
    const webhookIds = await webhooksRepository.enabledFor(trx, businessId, 'message_created');
    if (webhookIds.length === 0) return false;
    const message = await trx.selectFrom('messages').selectAll().where('business_id', '=', businessId).where('id', '=', messageId).executeTakeFirst();
    if (!message || !firesMessageCreated(message)) return false;
    const contact = await contactsRepository.find(trx, businessId, message.contact_id);
    if (!contact) return false;
    const files = await mediaRepository.forMessages(trx, businessId, [message.id]);
    const nowMs = this.clock.now();
    const payload = messageCreatedPayload(message, contact, files, { links: this.links, signingKey: this.signingKey, nowMs });
    const at = isoAt(nowMs);
    await webhookDeliveriesRepository.insertMany(
      trx,
      webhookIds.map((webhookId) => ({
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
      })),
    );
    return true;
  }

  /** Tells this process's delivery worker that deliveries were committed (other processes poll). */
  wake(): void {
    this.wakeWorker();
  }
}
